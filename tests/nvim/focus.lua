-- Never steal focus: generations finish while the user types in insert mode in another
-- file; the draft (and, with generation.startSession, the agent's terminal) open in
-- splits of their own, the current window and the mode unchanged.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local SESSION = assert(os.getenv("HANDOFF_SESSION"))

local function state()
  local wins = vim.api.nvim_tabpage_list_wins(0)
  local draft_wins, term_wins = 0, 0
  for _, win in ipairs(wins) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.b[buf].handoff_draft then
      draft_wins = draft_wins + 1
    end
    if vim.bo[buf].buftype == "terminal" then
      term_wins = term_wins + 1
    end
  end
  return {
    mode = vim.api.nvim_get_mode().mode,
    win = vim.api.nvim_get_current_win(),
    buf = vim.api.nvim_buf_get_name(0),
    windows = #wins,
    draft_windows = draft_wins,
    terminal_windows = term_wins,
  }
end

local at_done = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "HandoffDone",
  callback = function(ev)
    if ev.data.subcommand == "generate" then
      at_done[#at_done + 1] = state()
    end
  end,
})

H.async(function()
  local R = H.record
  vim.cmd("edit notes.md")
  R("before", state())

  -- Typing in insert mode when the generation ends.
  vim.api.nvim_feedkeys("iTyping in notes", "t", false)
  H.until_(function()
    return vim.api.nvim_get_mode().mode == "i"
  end, nil, "insert mode")
  R("generate", H.run("generate --session " .. vim.fn.fnameescape(SESSION)))
  H.sleep(300)
  R("after", state())

  -- generation.startSession: the terminal also opens without taking the focus.
  vim.g.handoff = { generation = { provider = "extractive", startSession = true } }
  R("generate_started", H.run("generate --session " .. vim.fn.fnameescape(SESSION)))
  H.sleep(300)
  R("after_started", state())
  R("at_done", at_done)
  vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "t", false)
  H.until_(function()
    return vim.api.nvim_get_mode().mode == "n"
  end, nil, "normal mode")
  R("typed", vim.api.nvim_buf_get_lines(vim.fn.bufnr("notes.md"), 0, -1, false))
end)
