-- :Handoff sessions and :Handoff generate (extractive): the session picked through
-- vim.ui.select, the focus typed, the draft opened in a normal buffer, edited, started
-- as a new pi session in a :terminal split (a fake `pi` on PATH), started again in
-- Claude Code (open = "none"), then prepared and committed.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local SESSION = assert(os.getenv("HANDOFF_SESSION"))
local FAKE_PI_OUT = assert(os.getenv("HANDOFF_FAKE_PI_OUT"))

H.main(function()
  local R = H.record

  R("sessions", H.handoff("sessions"))
  R("preview_sessions", H.preview())
  R("complete_sessions", vim.fn.getcompletion("Handoff generate --session ", "cmdline"))

  H.answer(function(item)
    return item.path == SESSION
  end, "keep the client API stable")
  local here = vim.api.nvim_get_current_win()
  local generated = H.handoff("generate")
  R("generate", generated)
  R("generate_notes", vim.deepcopy(H.notes))

  -- The draft is in a split of its own; the focus stayed where it was. Go there.
  R("generate_focus_kept", vim.api.nvim_get_current_win() == here)
  local draft_win
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.b[vim.api.nvim_win_get_buf(win)].handoff_draft then
      draft_win = win
    end
  end
  assert(draft_win, "no window shows the draft")
  vim.api.nvim_set_current_win(draft_win)
  local buf = vim.api.nvim_get_current_buf()
  R("draft", {
    text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"),
    buftype = vim.bo[buf].buftype,
    filetype = vim.bo[buf].filetype,
    modifiable = vim.bo[buf].modifiable,
    modified = vim.bo[buf].modified,
    name = vim.api.nvim_buf_get_name(buf),
    is_preview = buf == require("handoff.preview").bufnr(),
  })

  -- Edit the draft like any buffer, then start a pi session from it: the edit is in it.
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "", "Edited in Neovim before the handoff." })
  R("complete_agents", vim.fn.getcompletion("Handoff start ", "cmdline"))
  local windows_before = #vim.api.nvim_tabpage_list_wins(0)
  local notes = #H.notes
  R("start", H.handoff("start"))
  R("start_notes", vim.list_slice(H.notes, notes + 1))
  R("echospace", vim.v.echospace)
  local term = vim.api.nvim_get_current_buf()
  R("terminal", {
    buftype = vim.bo[term].buftype,
    windows = #vim.api.nvim_tabpage_list_wins(0) - windows_before,
    draft_still_shown = vim.api.nvim_win_is_valid(draft_win) and vim.api.nvim_win_get_buf(draft_win) == buf,
    started = vim.b[term].handoff_started and vim.b[term].handoff_started.command,
  })
  H.wait(function()
    return vim.fn.filereadable(FAKE_PI_OUT) == 1 and #vim.fn.readfile(FAKE_PI_OUT) > 0
  end, nil, "the fake pi to run in the terminal")
  R("fake_pi", vim.fn.readfile(FAKE_PI_OUT))
  -- While it ran, a hidden modified buffer stood for it (so :qa stops); its exit removed it.
  local function guards()
    return vim.tbl_filter(function(b)
      return vim.api.nvim_buf_get_name(b):match("^handoff://pi is running") ~= nil
    end, vim.api.nvim_list_bufs())
  end
  H.wait(function()
    return #guards() == 0
  end, nil, "the running agent's guard to go when it exits")
  R("guard_gone", #guards() == 0)

  -- Back in the draft: Claude Code, the command only shown (open = "none").
  vim.api.nvim_set_current_win(draft_win)
  vim.g.handoff_ui = { progress_echo = false, start = { open = "none", register = "a" } }
  windows_before = #vim.api.nvim_tabpage_list_wins(0)
  notes = #H.notes
  R("start_claude", H.handoff("start claude"))
  R("start_claude_notes", vim.list_slice(H.notes, notes + 1))
  R("start_claude_windows", #vim.api.nvim_tabpage_list_wins(0) - windows_before)
  R("register_a", vim.fn.getreg("a"))
  R("draft_started", vim.b[buf].handoff_started and vim.b[buf].handoff_started.agent)

  -- Outside a draft buffer :Handoff start says what to do.
  vim.cmd("new")
  notes = #H.notes
  R("start_elsewhere", H.handoff("start"))
  R("start_elsewhere_notes", vim.list_slice(H.notes, notes + 1))
  vim.cmd("close")
  vim.api.nvim_set_current_win(draft_win)

  R("prepare", H.handoff("prepare"))
  R("preview_prepared", H.preview())
  R("commit", H.handoff("commit"))
  R("continue", H.handoff("continue latest"))
  -- A committed revision starts a session from any buffer.
  vim.cmd("enew")
  R("complete_start_revision", vim.fn.getcompletion("Handoff start --revision ", "cmdline"))
  R("start_revision", H.handoff("start codex --revision " .. H.results.commit.result.revision))
  R("lineage", H.handoff("report lineage"))
  R("preview_lineage", H.preview())
end)
