-- A handoff document opened in Neovim: the running server checks its claims and the
-- findings are Neovim diagnostics; a hover answers with the verdict; the fix clears them.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local DOC = assert(os.getenv("HANDOFF_DOC"))

H.main(function()
  local R = H.record
  R("sessions", H.handoff("sessions")) -- the server is up for this workspace
  vim.cmd.edit(vim.fn.fnameescape(DOC))
  local buf = vim.api.nvim_get_current_buf()
  local client = require("handoff.client").get(buf)
  R("attached", client ~= nil and vim.lsp.buf_is_attached(buf, client.id))
  H.wait(function()
    return #vim.diagnostic.get(buf) > 0
  end, 20000, "diagnostics on the handoff document")
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    found[#found + 1] = { lnum = d.lnum, code = d.code, source = d.source, severity = d.severity, message = d.message }
  end
  R("diagnostics", found)
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = 2, character = 3 },
  }, 10000)
  local said
  for _, answer in pairs(hover or {}) do
    said = answer.result and answer.result.contents and answer.result.contents.value
  end
  R("hover", said)
  -- The user deletes the stale line: the diagnostics go.
  vim.api.nvim_buf_set_lines(buf, 2, 3, false, {})
  H.wait(function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "stale" then
        return false
      end
    end
    return true
  end, 20000, "the stale finding to go")
  R("after_fix", #vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.WARN }))
end)
