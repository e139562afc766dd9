-- :Handoff log, :Handoff restart and :Handoff cancel: the plugin's own upkeep (its
-- messages, its server, a running request); no handoff record is read or written.

local async = require("handoff.async")
local client_mod = require("handoff.client")
local msg = require("handoff.msg")
local preview = require("handoff.preview")

local M = {}

local function info(text)
  msg.notify(text, vim.log.levels.INFO)
end

M.log = {
  nargs = 0,
  desc = "show every message of this session whole, and where the LSP log is",
  flags = {},
  local_only = true,
  run = function()
    local names = { "TRACE", "DEBUG", "INFO", "WARN", "ERROR" }
    local lines = { "# Handoff messages", "" }
    for _, m in ipairs(msg.history) do
      lines[#lines + 1] = ("- %s %s %s"):format(m.time, names[(m.level or 2) + 1] or "INFO", m.text)
    end
    if #msg.history == 0 then
      lines[#lines + 1] = "No message yet."
    end
    lines[#lines + 1] = ""
    lines[#lines + 1] = "The server's own log lines: " .. vim.fn.fnamemodify(vim.lsp.get_log_path(), ":~")
    preview.show(table.concat(lines, "\n"), { title = "log" })
    return { messages = #msg.history }
  end,
}

M.restart = {
  nargs = 0,
  desc = "restart this workspace's handoff server (its buffers attached again)",
  flags = {},
  local_only = true,
  run = function(ctx)
    local old = client_mod.get(0)
    local buffers = {}
    if old then
      buffers = vim.lsp.get_buffers_by_client_id(old.id)
      old:stop()
      async.await(function(cb)
        local timer = assert(vim.uv.new_timer())
        local waited = 0
        timer:start(0, 20, function()
          waited = waited + 20
          -- Gone from the client list (not only stopping): ensure() then starts anew.
          if vim.lsp.get_client_by_id(old.id) == nil or waited > 5000 then
            timer:stop()
            timer:close()
            vim.schedule(function()
              if not old:is_stopped() then
                old:stop(true)
              end
              cb(true)
            end)
          end
        end)
      end)
    end
    local client = client_mod.ensure(0)
    for _, buf in ipairs(buffers) do
      if vim.api.nvim_buf_is_valid(buf) and not vim.lsp.buf_is_attached(buf, client.id) then
        vim.lsp.buf_attach_client(buf, client.id)
      end
    end
    ctx.client = client
    info(("Restarted the handoff server for %s."):format(vim.fn.fnamemodify(client.root_dir or ".", ":~")))
    return { restarted = old ~= nil, client = client.id }
  end,
}

M.cancel = {
  nargs = 0,
  desc = "cancel a running generation (or report)",
  flags = {},
  local_only = true,
  run = function()
    local n = client_mod.cancel()
    if n == 0 then
      info("No handoff generation is running.")
    end
    return { cancelled = n }
  end,
}

return M
