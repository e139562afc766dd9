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
  -- The lenses: the count first, then Start in each agent (no Prepare: not a draft).
  H.wait(function()
    vim.lsp.codelens.refresh({ bufnr = buf })
    return #vim.lsp.codelens.get(buf) > 0
  end, 20000, "the lenses")
  local titles = {}
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    titles[#titles + 1] = lens.command and lens.command.title
  end
  R("lenses", titles)
  -- The count lens's command: the findings in the location list.
  require("handoff.client").lens_command({ command = "handoffUi.showChecks", arguments = { vim.uri_from_bufnr(buf) } })
  R("loclist", #vim.fn.getloclist(0))
  vim.cmd.lclose()
  -- The quick fix on the stale line, applied as Neovim applies a code action's edit.
  local answer = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 2, character = 0 }, ["end"] = { line = 2, character = 0 } },
    context = { diagnostics = {} },
  }, 10000)
  local actions = {}
  for _, a in pairs(answer or {}) do
    for _, action in ipairs(a.result or {}) do
      actions[#actions + 1] = action
    end
  end
  R("actions", vim.tbl_map(function(a)
    return a.title
  end, actions))
  vim.lsp.util.apply_workspace_edit(actions[1].edit, client.offset_encoding)
  R("after_edit", vim.api.nvim_buf_get_lines(buf, 0, -1, false))
  H.wait(function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == "stale" then
        return false
      end
    end
    return true
  end, 20000, "the stale finding to go")
  R("after_fix", #vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.WARN }))
  -- Which Markdown files are handoffs: checkDocuments, matched from the end of the path.
  local C = require("handoff.client")
  local fake = { root_dir = client.root_dir, config = {}, settings = { handoff = { checkDocuments = { "docs/handoffs/*.md" } } } }
  local root = client.root_dir
  R("opted", {
    C.is_handoff_document(client, root .. "/HANDOFF.md"),
    C.is_handoff_document(client, root .. "/notes.md"),
    C.is_handoff_document(client, root .. "/.handoff/drafts/x.md"),
    C.is_handoff_document(fake, root .. "/docs/handoffs/Friday.md"),
    C.is_handoff_document(fake, root .. "/HANDOFF.md"),
    C.is_handoff_document(fake, "/elsewhere/docs/handoffs/x.md"),
  })
end)
