-- <CR> in previews: on a cited path it opens the file (at its line) in the window you
-- came from; on a revision it shows that handoff; on a session it starts a generate.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

local function cursor_on(pattern)
  local win = require("handoff.preview").window()
  vim.api.nvim_set_current_win(win)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for i, line in ipairs(lines) do
    local col = line:find(pattern)
    if col then
      vim.api.nvim_win_set_cursor(win, { i, col - 1 })
      return line
    end
  end
  error("no preview line matches " .. pattern)
end

local function press_enter()
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
end

H.main(function()
  local R = H.record
  vim.cmd("edit notes.md")
  local work_win = vim.api.nvim_get_current_win()
  H.handoff("contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'")
  H.handoff("work --state 'client generation completed :: client/pets_client.py' --next 'run tests :: openapi.yaml'")
  H.handoff("current")
  local rev = H.handoff("commit").result.revision

  -- A revision in the continuity report: <CR> shows that handoff.
  H.handoff("report continuity")
  R("revision_line", cursor_on("Committed handoff/"))
  press_enter()
  H.wait(function()
    return vim.startswith(H.preview() or "", "# Handoff handoff/")
  end, nil, "the handoff preview")
  R("revision_preview", H.preview())
  R("revision", rev)

  -- A cited file: <CR> opens it in the window you came from.
  R("file_line", cursor_on("evidence: openapi.yaml"))
  press_enter()
  R("file_opened", {
    win_is_work = vim.api.nvim_get_current_win() == work_win,
    name = vim.fn.expand("%:."),
  })
  -- path:LINE lands on the line.
  local preview = require("handoff.preview")
  local root = vim.lsp.get_clients({ name = "handoff" })[1].root_dir
  R("targets", preview.targets("- evidence: client/pets_client.py:2 (lines 2–3) sha256 `ab`", root, "handoff"))
  R("nothing", preview.targets("Every cited file and Source could be read", root, "handoff"))

  -- A session in the sessions list: <CR> asks for a focus, then generates from it.
  H.handoff("sessions")
  R("session_line", cursor_on("%.jsonl"))
  H.answer("the parser")
  press_enter()
  R("generate", H.wait_done("generate"))
end)
