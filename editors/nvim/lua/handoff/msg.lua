-- Messages that stay: every notification of the plugin is one line that fits the
-- command line (no "Press ENTER"); details belong in the preview or the draft.

local M = {}

--- `s` cut to `width` display cells, the middle replaced by "…".
function M.fit(s, width)
  if vim.fn.strdisplaywidth(s) <= width then
    return s
  end
  local keep = math.max(width - 1, 2)
  local head = math.floor(keep / 2)
  local tail = keep - head
  return vim.fn.strcharpart(s, 0, head) .. "…" .. vim.fn.strcharpart(s, vim.fn.strchars(s) - tail)
end

--- The room of the command line for a message.
function M.width()
  return math.max(vim.v.echospace or (vim.o.columns - 12), 20)
end

--- `msg` on one line: line breaks become " · ", cut in the middle to fit.
function M.one_line(msg)
  local text = tostring(msg):gsub("%s*\n+%s*", " · "):gsub("%s+$", "")
  return M.fit(text, M.width())
end

--- vim.notify of one line; a message that had to be cut goes whole to the LSP log.
--- Refusals (ERROR) are kept whole: the server's words are what to act on.
function M.notify(msg, level)
  if level == vim.log.levels.ERROR then
    vim.notify((tostring(msg):gsub("%s*\n+%s*", " · ")), level)
    return
  end
  local line = M.one_line(msg)
  if line ~= tostring(msg) then
    vim.lsp.log.info("handoff", tostring(msg))
  end
  vim.notify(line, level or vim.log.levels.INFO)
end

--- One line `prefix .. variable .. suffix`, only `variable` cut when it is too long.
function M.notify_parts(prefix, variable, suffix, level)
  suffix = suffix or ""
  local room = M.width() - vim.fn.strdisplaywidth(prefix .. suffix)
  vim.notify(prefix .. M.fit(variable, math.max(room, 8)) .. suffix, level or vim.log.levels.INFO)
end

return M
