-- Before a restart: a generated draft (a named file buffer under .handoff/drafts/)
-- edited and saved with :w; a committed handoff acknowledged twice (needs
-- clarification, then accepted). Then Neovim quits: nothing of it stays in memory.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local SESSION = assert(os.getenv("HANDOFF_SESSION"))

H.main(function()
  local R = H.record
  local here = vim.api.nvim_get_current_win()
  R("generate", H.handoff("generate --session " .. vim.fn.fnameescape(SESSION) .. " keep the API"))
  local draft_buf
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if vim.b[buf].handoff_draft then
      draft_buf = buf
    end
  end
  assert(draft_buf, "no window shows the draft")
  R("draft_opened", {
    name = vim.api.nvim_buf_get_name(draft_buf),
    modified = vim.bo[draft_buf].modified,
    filetype = vim.bo[draft_buf].filetype,
    focus_kept = vim.api.nvim_get_current_win() == here,
  })
  vim.api.nvim_buf_call(draft_buf, function()
    vim.api.nvim_buf_set_lines(draft_buf, -1, -1, false, { "", "Saved before the restart." })
    vim.cmd("write")
  end)
  R("draft_saved_modified", vim.bo[draft_buf].modified)
  local unnamed = 0
  for _, info in ipairs(vim.fn.getbufinfo({ buflisted = 1 })) do
    if info.name == "" and info.changed == 1 then
      unnamed = unnamed + 1
    end
  end
  R("unnamed_modified_buffers", unnamed)

  H.handoff("contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'")
  H.handoff("work --state 'client generation completed :: client/pets_client.py' --next 'run tests :: openapi.yaml'")
  H.handoff("current")
  local commit = H.handoff("commit")
  R("commit", commit)
  local rev = commit.result.revision
  R("ack_unclear", H.handoff("ack exact " .. rev .. " needs_clarification --note 'which tests?'"))
  R("ack", H.handoff("ack exact " .. rev .. " accepted --all-checks"))
  -- What would hold :qa up: a modified buffer (the saved draft is not one).
  R("modified_buffers", vim.tbl_map(function(info)
    return info.name
  end, vim.fn.getbufinfo({ bufmodified = 1 })))
end)
