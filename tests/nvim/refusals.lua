-- Refusals at 80 columns: each one line that fits the command line (no "Press ENTER"),
-- the whole text in :Handoff log; :Handoff restart gives the workspace a new server with
-- its handoff documents attached again.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.async(function()
  local R = H.record
  vim.g.handoff_ui = { progress_echo = false }
  H.track_messages()
  R("columns", vim.o.columns)
  R("contract", H.run("contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'"))
  local refused = {}
  for _, line in ipairs({
    "ack latest --status accepted",
    "continue exact handoff/doesnotexist@7",
    "start",
    "report nosuchkind",
    "commit --scope 'not a valid scope name at all with spaces and more words here'",
    "frobnicate",
  }) do
    local before = #H.notes
    H.run(line)
    for i = before + 1, #H.notes do
      if H.notes[i].level == vim.log.levels.ERROR then
        refused[#refused + 1] = { line = line, msg = H.notes[i].msg }
      end
    end
  end
  H.sleep(300)
  vim.cmd("redraw")
  R("refused", refused)
  R("echospace", vim.v.echospace)
  R("events", vim.deepcopy(H.area_events))
  -- A running agent: :qa stops at it ("No write since last change"), :qa! would not.
  local guard = require("handoff.drafts").running_guard("Claude Code", 7)
  local ok, err = pcall(vim.cmd, "qa")
  R("qa_with_agent", { ok = ok, err = tostring(err), name = vim.api.nvim_buf_get_name(guard) })
  vim.api.nvim_buf_delete(guard, { force = true })
  R("log", H.run("log"))
  R("log_text", H.preview())

  -- A handoff document attached, then the server restarted.
  vim.cmd.edit("HANDOFF.md")
  local buf = vim.api.nvim_get_current_buf()
  local old = require("handoff.client").get(buf)
  H.until_(function()
    return old and vim.lsp.buf_is_attached(buf, old.id)
  end, nil, "the handoff document attached")
  R("restart", H.run("restart"))
  local new = require("handoff.client").get(buf)
  R("restarted", {
    old_stopped = old:is_stopped(),
    new_id = new and new.id ~= old.id,
    attached = new ~= nil and vim.lsp.buf_is_attached(buf, new.id),
  })
end)
