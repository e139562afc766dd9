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

--- Every message the plugin showed, whole, oldest first (`:Handoff log` shows them).
M.history = {}
local HISTORY = 200

local function remember(text, level)
  table.insert(M.history, { time = os.date("%H:%M:%S"), level = level, text = text })
  if #M.history > HISTORY then
    table.remove(M.history, 1)
  end
end

--- vim.notify of one line that fits the command line (no "Press ENTER"), refusals
--- too: a message that had to be cut says where the whole of it is (`:Handoff log`).
function M.notify(msg, level)
  local whole = tostring(msg):gsub("%s*\n+%s*", " · "):gsub("%s+$", "")
  level = level or vim.log.levels.INFO
  remember(whole, level)
  local line = whole
  if vim.fn.strdisplaywidth(whole) > M.width() then
    -- The head is what to act on: cut at the end, then say where the rest is.
    local hint = "… (:Handoff log)"
    local room = math.max(M.width() - vim.fn.strdisplaywidth(hint), 20)
    line = vim.fn.strcharpart(whole, 0, room):gsub("%s+$", "") .. hint
    while vim.fn.strdisplaywidth(line) > M.width() and room > 20 do
      room = room - 1
      line = vim.fn.strcharpart(whole, 0, room):gsub("%s+$", "") .. hint
    end
    vim.lsp.log.info("handoff", whole)
  end
  vim.notify(line, level)
end

--- One line `prefix .. variable .. suffix`, only `variable` cut when it is too long.
function M.notify_parts(prefix, variable, suffix, level)
  suffix = suffix or ""
  remember(prefix .. variable .. suffix, level or vim.log.levels.INFO)
  local room = M.width() - vim.fn.strdisplaywidth(prefix .. suffix)
  vim.notify(prefix .. M.fit(variable, math.max(room, 8)) .. suffix, level or vim.log.levels.INFO)
end

return M
