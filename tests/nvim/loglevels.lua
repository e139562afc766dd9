-- The server's log in lsp.log at its levels: INFO lines as INFO (window/logMessage),
-- not as stderr ERRORs.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.main(function()
  local R = H.record
  vim.lsp.log.set_level("info")
  R("refused", H.handoff("ack latest accepted"))
  R("report", H.handoff("report continuity"))
  vim.wait(300, function()
    return false
  end)
  R("log", table.concat(vim.fn.readfile(vim.lsp.log.get_filename()), "\n"))
end)
