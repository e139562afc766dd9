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
    -- The server's log as window/logMessage, so lsp.log has each line at its level
    -- (Neovim logs a server's stderr as ERROR).
    params.capabilities = params.capabilities or {}
    params.capabilities.experimental = params.capabilities.experimental or {}
    params.capabilities.experimental.handoff = { logMessages = true }
  end,
  handlers = {
    ["handoff/didChange"] = function(_, params, ctx)
      require("handoff.preview").on_did_change(params, ctx.client_id)
    end,
  },
}
