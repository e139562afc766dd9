-- The `handoff` settings section: vim.g.handoff over the LSP config's settings.handoff.

local M = {}

--- Drops empty tables (Vimscript turns `{}` into a list, which the server would refuse).
local function prune(value)
  if type(value) ~= "table" then
    return value
  end
  if vim.islist(value) and next(value) ~= nil then
    local out = {}
    for i, v in ipairs(value) do
      out[i] = prune(v)
    end
    return out
  end
  local out = {}
  for k, v in pairs(value) do
    local p = prune(v)
    if not (type(p) == "table" and next(p) == nil) then
      out[k] = p
    end
  end
  return out
end

--- The settings the server gets: the config's `settings.handoff`, then vim.g.handoff on top.
---@return table
function M.resolve()
  local ok, config = pcall(function()
    return vim.lsp.config.handoff
  end)
  local base = ok and config and config.settings and config.settings.handoff or {}
  local user = vim.g.handoff
  if user ~= nil and type(user) ~= "table" then
    vim.notify_once("handoff: vim.g.handoff must be a table; ignoring it.", vim.log.levels.WARN)
    user = nil
  end
  local settings = prune(vim.tbl_deep_extend("force", {}, base, user or {}))
  -- An empty table would be encoded as a JSON list.
  return next(settings) == nil and vim.empty_dict() or settings
end

--- Sends didChangeConfiguration when vim.g.handoff changed since the client last sent it.
---@param client vim.lsp.Client
function M.sync(client)
  local current = M.resolve()
  client.settings = client.settings or {}
  if not vim.deep_equal(client.settings.handoff, current) then
    client.settings.handoff = current
    client:notify("workspace/didChangeConfiguration", { settings = client.settings })
  end
end

return M
