-- Draft buffers and started agents: the buffer :Handoff generate opens (a draft file
-- the server saved, recognised again after a restart) and the agent :Handoff start runs
-- (a terminal split, a guard against :qa while it runs, the one-line report).

local async = require("handoff.async")
local msg = require("handoff.msg")

local M = {}

--- buffer number -> { draft, scope, root, generation, sourceSession, draftPath }
M.drafts = {}

--- An agent's name as the user knows it ("Claude Code"), from the plugin's agent list.
local function label_of(agent)
  local labels = require("handoff.commands").AGENT_LABELS
  return labels[agent] or tostring(agent)
end

--- Marks `buf` as a draft: `entry` = { draft, scope, root, generation, sourceSession, draftPath }.
local function adopt_draft(buf, entry)
  M.drafts[buf] = entry
  vim.b[buf].handoff_draft = true
  vim.b[buf].handoff_generation = entry.generation
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      M.drafts[buf] = nil
    end,
  })
end

--- Opens a generated document as an editable markdown buffer: the draft file the
--- server saved (`.handoff/drafts/<time>-<generation>.md`), so it has a name, `:w`
--- keeps the edits, `:qa` does not ask, and it is still a draft after a restart.
function M.open_draft(ctx, result)
  local root = ctx.client.root_dir
  local buf
  if type(result.draftPath) == "string" and root then
    buf = vim.fn.bufadd(vim.fs.joinpath(root, result.draftPath))
    vim.fn.bufload(buf)
    vim.bo[buf].buflisted = true
  else
    -- A server that saves no draft file: an unnamed buffer ('modified', so :quit asks).
    buf = vim.api.nvim_create_buf(true, false)
    local lines = vim.split(result.document or "", "\n", { plain = true })
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  end
  vim.bo[buf].filetype = "markdown"
  adopt_draft(buf, {
    draft = result.draft,
    scope = result.scope,
    root = root,
    generation = result.generation,
    sourceSession = result.sourceSession,
    draftPath = result.draftPath,
  })
  -- The window of a draft already shown takes the new one (one draft split, not one
  -- per generate); else a split of its own, never entered: a generation can end while
  -- you type elsewhere (the current window and the mode stay as they are).
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local shown = vim.api.nvim_win_get_buf(win)
    if shown ~= buf and M.drafts[shown] and win ~= vim.api.nvim_get_current_win() then
      vim.api.nvim_win_set_buf(win, buf)
      return buf
    end
  end
  M.open_window(buf, false)
  return buf
end

--- The draft `buf` holds: one this Neovim opened, else a saved draft file
--- (`<root>/.handoff/drafts/*.md` with its `.json` beside it, as the server writes
--- them), so drafts survive a restart. nil: not a draft.
function M.draft_of(buf)
  if M.drafts[buf] then
    return M.drafts[buf]
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" then
    return nil
  end
  name = vim.fs.normalize(vim.fn.fnamemodify(name, ":p"))
  local folder = vim.fs.dirname(name)
  if not (name:match("%.md$") and vim.fs.basename(folder) == "drafts") then
    return nil
  end
  local file = io.open(name:sub(1, -4) .. ".json", "r")
  if not file then
    return nil
  end
  local ok, saved = pcall(vim.json.decode, file:read("*a"))
  file:close()
  if not ok or type(saved) ~= "table" or type(saved.draft) ~= "table" then
    return nil
  end
  local state = vim.fs.dirname(folder)
  local entry = {
    draft = saved.draft,
    scope = saved.scope,
    root = vim.fs.dirname(state),
    generation = saved.generation,
    draftPath = vim.fs.basename(state) .. "/drafts/" .. vim.fs.basename(name),
  }
  adopt_draft(buf, entry)
  return entry
end

--- Shows `buf` in a new split (g:handoff_ui.split) beside the current window;
--- `enter` false keeps the focus (and the mode) where it is.
function M.open_window(buf, enter, split)
  local ui = vim.g.handoff_ui or {}
  split = split or ui.split or "auto"
  if split == "auto" then
    split = vim.o.columns >= 120 and "vertical" or "horizontal"
  end
  return vim.api.nvim_open_win(buf, enter, { split = split == "vertical" and "right" or "below", win = 0 })
end

--- g:handoff_ui.start: { open = "terminal" | "none", split = ..., register = ... }.
local function start_options()
  local ui = vim.g.handoff_ui or {}
  return type(ui.start) == "table" and ui.start or {}
end

--- The command as the user would type it here: without `cd <workspace> &&` when the
--- workspace is the current directory, home as ~.
local function display_command(command, root)
  local shown = command
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  local cd = command:match("^cd (.-) && ")
  if cd and root then
    local unquoted = cd:gsub("^'(.*)'$", "%1")
    if vim.fs.normalize(unquoted) == cwd and vim.fs.normalize(root) == cwd then
      shown = command:sub(#cd + 8)
    end
  end
  local home = vim.uv.os_homedir()
  if home and home ~= "" and home ~= "/" then
    shown = shown:gsub(vim.pesc(home) .. "/", "~/")
  end
  return shown
end

--- One line that fits the command line (no "Press ENTER"): `prefix .. variable ..
--- suffix`, only `variable` cut when it is too long.
local notify_line = msg.notify_parts

--- A hidden, modified buffer that stands for a running agent, so `:qa` stops at it
--- ("No write since last change") instead of killing the agent; `:qa!` still quits.
--- Deleted when the agent's job ends. Returns the buffer.
function M.running_guard(label, job)
  local guard = vim.api.nvim_create_buf(false, true)
  vim.bo[guard].buftype = "acwrite"
  vim.bo[guard].bufhidden = "hide"
  vim.api.nvim_buf_set_name(guard, ("handoff://%s is running (job %d; :qa! stops it)"):format(label, job))
  vim.api.nvim_buf_set_lines(guard, 0, -1, false, { ("%s runs in a terminal of this Neovim."):format(label) })
  vim.bo[guard].modified = true
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = guard,
    callback = function()
      msg.notify(("Handoff: %s is still running; :qa! stops it."):format(label), vim.log.levels.WARN)
    end,
  })
  return guard
end

--- Runs the started session's command in a :terminal in a split; returns the buffer.
--- `enter` false (a generation that started a session itself): the focus stays.
local function open_terminal(result, root, enter)
  local buf = vim.api.nvim_create_buf(true, false)
  local win = M.open_window(buf, enter, start_options().split)
  local job
  local guard -- set below: the job's exit removes it
  vim.api.nvim_win_call(win, function()
    job = vim.fn.jobstart(result.command, {
      term = true,
      cwd = root,
      on_exit = function()
        vim.schedule(function()
          if guard and vim.api.nvim_buf_is_valid(guard) then
            vim.api.nvim_buf_delete(guard, { force = true })
          end
        end)
      end,
    })
  end)
  if job <= 0 then
    vim.api.nvim_buf_delete(buf, { force = true })
    async.fail("refused", ("The terminal did not start (%s): %s"):format(job, result.command))
  end
  guard = M.running_guard(label_of(result.agent), job)
  if enter then
    vim.cmd.startinsert() -- the agent takes the keys (Terminal mode), as :terminal does
  end
  vim.b[buf].handoff_started = result
  return buf
end

--- Shows (or runs) what handoff.startSession returned, as g:handoff_ui.start says.
function M.open_started(ctx, result, draft_buf, keep_focus)
  local opts = start_options()
  local open = opts.open or "terminal"
  local label = label_of(result.agent)
  if draft_buf and vim.api.nvim_buf_is_valid(draft_buf) then
    vim.b[draft_buf].handoff_started = result
  end
  if type(opts.register) == "string" and opts.register ~= "" then
    vim.fn.setreg(opts.register, result.command)
  end
  -- What the handed-over text contradicts or dropped of its session: said on the same
  -- line, as a warning (not held back; each is a diagnostic of the draft).
  local claims = #(result.claims or {})
  local suffix = claims > 0 and ("  (%d claim(s) contradicted or dropped)"):format(claims) or ""
  local level = claims > 0 and vim.log.levels.WARN or nil
  if open == "terminal" then
    open_terminal(result, ctx.client.root_dir, not keep_focus)
    notify_line(
      ("Handoff: started %s in a terminal split: "):format(label),
      display_command(result.command, ctx.client.root_dir),
      suffix,
      level
    )
  else
    notify_line(
      ("Handoff: started %s; run: "):format(label),
      display_command(result.command, ctx.client.root_dir),
      suffix,
      level
    )
  end
end

return M
