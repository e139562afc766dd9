-- The preview split: one reused scratch buffer (filetype markdown, `q` closes it),
-- re-rendered when the server announces a change (handoff/didChange).

local M = {}

local pending = false

local BUFNAME = "handoff://preview"

--- What the preview shows: { title, client_id, refresh = fun(done: fun(text?)) }.
M.view = nil

local function buffer()
  local buf = vim.fn.bufnr(BUFNAME)
  if buf ~= -1 and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, BUFNAME)
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "markdown"
  vim.keymap.set("n", "q", function()
    M.close()
  end, { buffer = buf, nowait = true, silent = true, desc = "Close the handoff preview" })
  vim.keymap.set("n", "R", function()
    M.refresh()
  end, { buffer = buf, nowait = true, silent = true, desc = "Re-check the evidence and re-render" })
  vim.keymap.set("n", "<CR>", function()
    M.follow()
  end, { buffer = buf, nowait = true, silent = true, desc = "Open the file, revision or session under the cursor" })
  vim.keymap.set("n", "g?", function()
    M.help()
  end, { buffer = buf, nowait = true, silent = true, desc = "List the keys of the handoff preview" })
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = buf,
    desc = "Re-render a handoff preview that went stale while hidden",
    callback = function()
      if M.stale then
        vim.schedule(M.refresh)
      end
    end,
  })
  return buf
end

--- The keys of the preview buffer, as `g?` lists them.
M.KEYS = {
  { "q", "close" },
  { "R", "re-check" },
  { "<CR>", "open" },
  { "g?", "keys" },
}

--- `g?`: the preview's keys, on one line.
function M.help()
  local parts = {}
  for _, key in ipairs(M.KEYS) do
    parts[#parts + 1] = key[1] .. " " .. key[2]
  end
  require("handoff.msg").notify("Handoff preview: " .. table.concat(parts, " · "), vim.log.levels.INFO)
end

--- The workspace folder of the client the preview shows, if any.
local function view_root()
  local view = M.view
  local client = view and view.client_id and vim.lsp.get_client_by_id(view.client_id)
  return client and client.root_dir
end

--- The things `<CR>` opens on `line`, in order: { first, last (columns), kind =
--- "revision" | "session" | "file", value, lnum? }. A readable path (workspace-relative
--- or absolute, `path:LINE` too) is a file, or in the sessions and lineage previews a
--- session (`.jsonl`).
function M.targets(line, root, title)
  local out = {}
  for first, rev, after in line:gmatch("()(handoff/[%w]+@%d+)()") do
    out[#out + 1] = { first = first, last = after - 1, kind = "revision", value = rev }
  end
  local sessions = title == "sessions" or title == "lineage"
  for first, word, after in line:gmatch("()([^%s`|()\"',;*]+)()") do
    local path, lnum = word:match("^(.-):(%d+)$")
    path = (path or word):gsub("[.:]+$", "")
    if path ~= "" and not path:match("^handoff/") and not path:match("^source/") and not path:match("^%a+://") then
      local full = vim.fn.fnamemodify(vim.fn.expand(path), ":p")
      if root and not vim.startswith(path, "/") and not vim.startswith(path, "~") then
        full = vim.fs.joinpath(root, path)
      end
      if vim.fn.filereadable(full) == 1 then
        local kind = (sessions and path:match("%.jsonl$")) and "session" or "file"
        out[#out + 1] = { first = first, last = after - 1, kind = kind, value = full, lnum = tonumber(lnum) }
      end
    end
  end
  table.sort(out, function(x, y)
    return x.first < y.first
  end)
  return out
end

--- A window to open a file in: the last one you were in, else a new split above.
local function work_window()
  local preview_win = M.window()
  local previous = vim.fn.win_getid(vim.fn.winnr("#"))
  if previous ~= 0 and previous ~= preview_win and vim.api.nvim_win_is_valid(previous) then
    return previous
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if win ~= preview_win and vim.bo[buf].buftype == "" then
      return win
    end
  end
  vim.cmd("aboveleft split")
  return vim.api.nvim_get_current_win()
end

--- `<CR>`: on a cited path, opens the file at its line (in the window you came from);
--- on a revision, shows that handoff; on a session, asks for a focus, then generates. The
--- target under the cursor, else the first on the line.
function M.follow()
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2] + 1
  local found = M.targets(line, view_root(), M.view and M.view.title)
  local target = found[1]
  for _, t in ipairs(found) do
    if t.first <= col and col <= t.last then
      target = t
      break
    end
  end
  if not target then
    require("handoff.msg").notify("Handoff preview: nothing to open on this line.", vim.log.levels.INFO)
    return nil
  end
  if target.kind == "revision" then
    require("handoff").run("report handoff " .. target.value)
  elseif target.kind == "session" then
    -- As :Handoff generate asks when it picks the session: a focus first (Esc: nothing).
    vim.ui.input({ prompt = "Focus (optional): " }, function(focus)
      if focus == nil then
        return
      end
      local escape = function(s)
        return (s:gsub("([%s\"'\\])", "\\%1"))
      end
      local line = "generate --session " .. escape(target.value)
      if vim.trim(focus) ~= "" then
        line = line .. " " .. escape(vim.trim(focus))
      end
      require("handoff").run(line)
    end)
  else
    vim.api.nvim_set_current_win(work_window())
    vim.cmd.edit(vim.fn.fnameescape(target.value))
    if target.lnum then
      pcall(vim.api.nvim_win_set_cursor, 0, { target.lnum, 0 })
    end
  end
  return target
end

--- The preview buffer, if it exists.
function M.bufnr()
  local buf = vim.fn.bufnr(BUFNAME)
  return buf ~= -1 and vim.api.nvim_buf_is_valid(buf) and buf or nil
end

--- The window showing the preview in the current tab, if any.
function M.window()
  local buf = M.bufnr()
  if not buf then
    return nil
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  return nil
end

local function open_window(buf)
  local win = M.window()
  if win then
    return win
  end
  local ui = vim.g.handoff_ui or {}
  local split = ui.split or "auto"
  if split == "auto" then
    split = vim.o.columns >= 120 and "vertical" or "horizontal"
  end
  local previous = vim.api.nvim_get_current_win()
  vim.cmd((split == "vertical" and "vertical " or "") .. "botright split")
  win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, buf)
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  -- Nothing hidden: record text is shown as written (a `_` or `*` in it is content,
  -- not emphasis for the markdown syntax to conceal).
  vim.wo[win].conceallevel = 0
  vim.wo[win].number = false
  vim.wo[win].relativenumber = false
  vim.wo[win].spell = false
  if vim.api.nvim_win_is_valid(previous) then
    vim.api.nvim_set_current_win(previous)
  end
  return win
end

local function set_text(buf, text)
  local lines = vim.split(text or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
end

local function announce(view)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "HandoffPreview",
    modeline = false,
    data = { title = view and view.title, bufnr = M.bufnr() },
  })
end

--- Shows `text` in the preview split; `view.refresh` re-renders it on server changes.
---@param text string markdown
---@param view? { title?: string, client_id?: integer, refresh?: fun(done: fun(text?: string)) }
function M.show(text, view)
  local buf = buffer()
  M.view = view or {}
  M.stale = false
  vim.b[buf].handoff_title = M.view.title
  set_text(buf, text)
  local win = open_window(buf)
  pcall(vim.api.nvim_win_set_cursor, win, { 1, 0 })
  announce(M.view)
  return buf
end

--- Closes the preview window (the buffer is kept for the next preview).
function M.close()
  local win = M.window()
  if win and #vim.api.nvim_tabpage_list_wins(0) > 1 then
    vim.api.nvim_win_close(win, true)
  elseif win then
    vim.cmd("enew")
  end
end

--- Whether the view changed while the preview was hidden (re-rendered when shown).
M.stale = false

--- Re-renders the current view while it is visible; called after handoff/didChange
--- (debounced). A hidden preview is only marked stale: no request, no message.
function M.refresh()
  local view, buf = M.view, M.bufnr()
  if not (view and view.refresh and buf) then
    return
  end
  if not M.window() then
    M.stale = true
    return
  end
  M.stale = false
  view.refresh(function(text)
    if text and M.view == view and vim.api.nvim_buf_is_valid(buf) then
      set_text(buf, text)
      announce(view)
    end
  end)
end

local function schedule_refresh()
  if pending then
    return
  end
  pending = true
  vim.defer_fn(function()
    pending = false
    M.refresh()
  end, 30)
end

--- The workspace-relative path of `file` when the preview cites it, else nil.
local function cited(file)
  local view, buf = M.view, M.bufnr()
  local client = view and view.client_id and vim.lsp.get_client_by_id(view.client_id)
  local root = client and client.root_dir
  if not (buf and root and file ~= "") then
    return nil
  end
  file, root = vim.fs.normalize(vim.fn.fnamemodify(file, ":p")), vim.fs.normalize(root)
  if not vim.startswith(file, root .. "/") then
    return nil
  end
  local rel = file:sub(#root + 2)
  for _, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find(rel, 1, true) then
      return rel
    end
  end
  return nil
end

--- BufWritePost: a written file the preview cites makes it re-check the evidence.
function M.on_write(file)
  if M.view and M.view.refresh and cited(file) then
    schedule_refresh()
  end
end

vim.api.nvim_create_autocmd("BufWritePost", {
  group = vim.api.nvim_create_augroup("handoff.preview", { clear = true }),
  desc = "Re-check the handoff preview's evidence when a cited file is written",
  callback = function(ev)
    M.on_write(ev.match)
  end,
})

--- handoff/didChange from client `client_id`: refresh the preview when it shows that
--- client's state.
function M.on_did_change(params, client_id)
  vim.api.nvim_exec_autocmds("User", {
    pattern = "HandoffChanged",
    modeline = false,
    data = { client_id = client_id, params = params },
  })
  local view = M.view
  if not view or not view.refresh or (view.client_id and view.client_id ~= client_id) then
    return
  end
  schedule_refresh()
end

return M
