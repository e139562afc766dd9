-- :checkhealth handoff: the server binary, its version, running clients and the
-- workspace state folder.

local M = {}

local function config()
  local ok, cfg = pcall(function()
    return vim.lsp.config.handoff
  end)
  return ok and cfg or nil
end

--- The cache of `--version` answers: stdpath("cache")/handoff/version.json, one entry
--- per command line, valid while the binary's size and modification time are unchanged.
local function cache_file()
  return vim.fs.joinpath(vim.fn.stdpath("cache"), "handoff", "version.json")
end

local function read_cache()
  local file = io.open(cache_file(), "r")
  if not file then
    return {}
  end
  local ok, data = pcall(vim.json.decode, file:read("*a"))
  file:close()
  return ok and type(data) == "table" and data or {}
end

local function write_cache(data)
  vim.fn.mkdir(vim.fs.dirname(cache_file()), "p")
  local file = io.open(cache_file(), "w")
  if file then
    file:write(vim.json.encode(data))
    file:close()
  end
end

--- The server's version: asked of a running client when there is one (nothing is
--- spawned), else `cmd --version`, cached until the binary changes. Returns the
--- version, where it came from, or nil and the error.
function M.server_version(cmd, path)
  for _, client in ipairs(vim.lsp.get_clients({ name = "handoff" })) do
    local info = client.server_info or {}
    if info.version then
      return ("%s %s"):format(info.name or "handoff-lsp", info.version), "the running server"
    end
  end
  local stat = vim.uv.fs_stat(path)
  local key = table.concat(cmd, " ")
  local stamp = stat and ("%d:%d.%d"):format(stat.size, stat.mtime.sec, stat.mtime.nsec) or ""
  local cache = read_cache()
  local hit = cache[key]
  if type(hit) == "table" and hit.stamp == stamp and type(hit.version) == "string" then
    return hit.version, "cached"
  end
  local argv = vim.list_extend(vim.deepcopy(cmd), { "--version" })
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return nil, tostring(proc)
  end
  local res = proc:wait(10000)
  if res.code ~= 0 then
    return nil, vim.trim((res.stderr or "") .. (res.stdout or ""))
  end
  local version = vim.trim(res.stdout ~= "" and res.stdout or res.stderr)
  cache[key] = { stamp = stamp, version = version }
  write_cache(cache)
  return version, "--version"
end

function M.check()
  local health = vim.health
  health.start("handoff: Neovim")
  if vim.fn.has("nvim-0.11") == 1 then
    health.ok("Neovim " .. tostring(vim.version()))
  else
    health.error("Neovim 0.11 or newer is needed (client:request, vim.lsp.config).")
  end

  health.start("handoff: language server")
  local cfg = config()
  if not cfg then
    health.error("No 'handoff' LSP config found: add editors/nvim to the runtimepath.")
    return
  end
  local cmd = cfg.cmd
  if type(cmd) ~= "table" then
    health.info("cmd is a function; cannot check the binary.")
  else
    local path = vim.fn.exepath(cmd[1])
    if path == "" then
      health.error(("Server binary %s not found."):format(cmd[1]), {
        "Install the handoff-lsp package (it provides the handoff-lsp command),",
        'or point cmd at it: vim.lsp.config("handoff", { cmd = { "/path/to/handoff-lsp" } })',
      })
    else
      health.ok(("Server binary: %s"):format(path))
      if #cmd > 1 then
        health.info(("cmd: %s"):format(table.concat(cmd, " ")))
      end
      local version, err = M.server_version(cmd, path)
      if version then
        health.ok(("Server version: %s (%s)"):format(version, err))
      else
        health.warn(("%s --version failed: %s"):format(table.concat(cmd, " "), err or "?"))
      end
    end
  end
  if vim.lsp.is_enabled and vim.lsp.is_enabled("handoff") then
    health.ok('Enabled with vim.lsp.enable("handoff").')
  else
    health.info('Not enabled: :Handoff starts the server on demand (or call vim.lsp.enable("handoff")).')
  end

  health.start("handoff: settings")
  local settings = require("handoff.settings").resolve()
  health.info("handoff settings: " .. vim.inspect(settings, { newline = " ", indent = "" }))

  health.start("handoff: workspaces")
  local clients = vim.lsp.get_clients({ name = "handoff" })
  if #clients == 0 then
    local root, marked = require("handoff.client").root_for(0, cfg)
    local folder = root .. "/" .. (settings.stateFolder or ".handoff")
    if marked then
      health.info(("No handoff client running. Workspace would be %s."):format(root))
    else
      health.info(("No handoff client running; no root marker here: :Handoff asks before "
        .. "keeping state in %s."):format(root))
    end
    health.info(("State folder %s %s."):format(folder, vim.uv.fs_stat(folder) and "exists" or "does not exist yet"))
    return
  end
  for _, client in ipairs(clients) do
    local root = client.root_dir or "(no workspace folder)"
    health.ok(("Client %d running for %s"):format(client.id, root))
    local info = client.server_info or {}
    if info.version then
      health.info(("Server reports %s %s"):format(info.name or "handoff-lsp", info.version))
    end
    local ping = require("handoff.client").call_sync(client, "handoff.ping", vim.empty_dict(), 3000)
    if ping and ping.ok then
      health.ok(("handoff.ping answered: version %s"):format(tostring(ping.version)))
    else
      health.warn("handoff.ping did not answer (server too old, or busy).")
    end
    local folder = (client.root_dir or vim.fn.getcwd()) .. "/" .. (settings.stateFolder or ".handoff")
    local moved = vim.tbl_map(vim.fs.basename, vim.fn.glob(folder .. "/state.json.corrupt-*", false, true))
    local live = vim.uv.fs_stat(folder .. "/state.json")
    local repair = "Repair it: `handoff store repair` in the workspace (restore from the journal and segments, or start over), then :Handoff restart."
    if not live and (#moved > 0 or vim.uv.fs_stat(folder .. "/store-id")) then
      -- The store is damaged: the server refuses to read or write it until it is repaired.
      health.error(
        ("State folder %s: %s"):format(
          folder,
          #moved > 0 and ("a damaged state file was moved aside as %s"):format(table.concat(moved, ", "))
            or "its state file is missing (the store existed: store-id is there)"
        ),
        { repair }
      )
    elseif #moved > 0 then
      health.warn(
        ("State folder %s: a damaged state file was moved aside earlier as %s."):format(folder, table.concat(moved, ", ")),
        { "The store was repaired since; delete the copy once you no longer need it." }
      )
    elseif vim.uv.fs_stat(folder) then
      health.ok(("State folder: %s"):format(folder))
    else
      health.info(("State folder %s does not exist yet (written on the first record)."):format(folder))
    end
  end
end

return M
