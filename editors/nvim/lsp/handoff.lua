-- The handoff-lsp client config, found by vim.lsp.config / vim.lsp.enable("handoff").
-- Override any field with vim.lsp.config("handoff", { ... }); options go in
-- vim.g.handoff or in this config's `settings.handoff`.

---@type vim.lsp.Config
return {
  cmd = { "handoff-lsp" },
  root_markers = { ".handoff", ".git" },
  -- The state lives in the workspace: without a marker, vim.lsp.enable starts nothing
  -- (:Handoff then starts a client for the current directory).
  workspace_required = true,
  settings = { handoff = {} },
  before_init = function(params, config)
    local settings = require("handoff.settings").resolve(config)
    config.settings = config.settings or {}
    config.settings.handoff = settings
    params.initializationOptions = settings
  end,
  handlers = {
    ["handoff/didChange"] = function(_, params, ctx)
      require("handoff.preview").on_did_change(params, ctx.client_id)
    end,
  },
}
