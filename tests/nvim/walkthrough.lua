-- The OpenAPI walkthrough of docs/model.md through :Handoff subcommands, against the
-- real server. Prompts are answered through vim.ui.input / vim.ui.select.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.main(function()
  local R = H.record
  vim.cmd("edit client/pets_client.py")

  -- 1. Work Contract, fully interactive.
  H.answer(
    "complete the OpenAPI client update",
    "regenerate the checked-in client",
    "changing the API itself",
    "contract tests pass"
  )
  local contract = H.handoff("contract")
  R("contract", contract)
  local source = contract.result.source
  R("attached", #vim.lsp.get_clients({ name = "handoff", bufnr = 0 }))

  -- 2. Work state, from arguments (quoted words, a citation of the contract).
  local work = H.handoff(
    ('work --state "client generation completed :: client/pets_client.py" '
      .. "--disposition continuable --next 'run contract tests :: %s'"):format(source)
  )
  R("work", work)

  -- 3. Hand off current work: a prepared handoff shown in the preview.
  local current = H.handoff("current")
  R("current", current)
  R("preview_prepared", H.preview())
  local buf = require("handoff.preview").bufnr()
  R("preview_options", {
    filetype = vim.bo[buf].filetype,
    buftype = vim.bo[buf].buftype,
    modifiable = vim.bo[buf].modifiable,
    windows = #vim.fn.win_findbuf(buf),
    current_is_preview = vim.api.nvim_get_current_buf() == buf,
  })

  -- The successor continues from prepared; latest is still empty.
  R("continue_prepared", H.handoff("continue prepared"))
  R("continue_empty", H.handoff("continue latest"))
  R("preview_empty", H.preview())

  -- 4. Commit, and retry the same prepared handoff (idempotent).
  local commit = H.handoff("commit")
  R("commit", commit)
  R("commit_again", H.handoff("commit"))
  local revision = commit.result.revision

  -- Completion offers subcommands and the committed revision.
  R("complete_subcommands", vim.fn.getcompletion("Handoff ", "cmdline"))
  R("complete_revisions", vim.fn.getcompletion("Handoff continue exact ", "cmdline"))
  R("complete_ack_status", vim.fn.getcompletion("Handoff ack exact " .. revision .. " ", "cmdline"))
  R("complete_report", vim.fn.getcompletion("Handoff report c", "cmdline"))

  -- 5. Continue from latest; acknowledging "latest" is refused; acknowledge the exact
  --    revision interactively (mode, revision, status, the four checks).
  R("continue_latest", H.handoff("continue latest"))
  R("preview_latest", H.preview())
  local notes_before = #H.notes
  R("ack_latest", H.handoff("ack latest accepted"))
  R("ack_latest_notes", vim.list_slice(H.notes, notes_before + 1))
  H.answer("exact", revision, "accepted", "yes", "yes", "yes", "yes")
  R("ack", H.handoff("ack"))

  -- 6. The continuity report in the preview, then the Task Outcome: the server's
  --    handoff/didChange refreshes the open preview.
  R("report_before", H.handoff("report continuity"))
  R("preview_continuity_before", H.preview())
  local renders = H.preview_count()
  R("outcome", H.handoff('outcome succeeded contract tests pass against the regenerated client --check "contract tests=passed"'))
  H.wait(function()
    return H.preview_count() > renders and (H.preview() or ""):find("covered", 1, true) ~= nil
  end, nil, "the preview to refresh after the outcome")
  R("preview_continuity_after", H.preview())
  R("history", H.handoff("report history"))
  R("preview_history", H.preview())
  -- One record, as the handoff cites it.
  R("report_source", H.handoff("report source " .. source))
  R("preview_source", H.preview())

  -- Record text reads as written in the preview (rendered for a terminal: no entities).
  H.handoff(
    "work --state \"ran make test && tail -n 5 log 2>&1 <ok> :: client/pets_client.py\" "
      .. "--disposition done --next 'nothing left :: " .. source .. "'"
  )
  H.handoff("report continuity")
  R("preview_terminal", H.preview())

  -- `q` closes the preview window.
  local win = require("handoff.preview").window()
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_feedkeys("q", "x", false)
  R("preview_closed", require("handoff.preview").window() == nil)
end)
