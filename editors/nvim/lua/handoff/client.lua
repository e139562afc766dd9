-- The handoff-lsp client: found or started on demand, commands run as
-- workspace/executeCommand requests, running requests and progress tokens tracked for
-- :Handoff cancel.

local async = require("handoff.async")

local M = {}

local NAME = "handoff"
local EXECUTE = "workspace/executeCommand"
local CANCELLED = -32800

--- Requests in flight, per client: [client_id][request_id] = { command = ... }.
M.inflight = {}
--- Cancellable work-done progress tokens, per client: [client_id][token] = title.
M.progress = {}

local function contains(dir, path)
  if not dir or not path then
    return false
  end
  dir = vim.fs.normalize(dir)
  path = vim.fs.normalize(path)
  return path == dir or vim.startswith(path, dir .. "/")
end

--- The handoff client for `bufnr`: attached to it; for the preview, the client it shows;
--- for a draft, its workspace's; else the one whose workspace holds the buffer's file
--- (or the current directory). Never another workspace's client: nil then.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.get(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local attached = vim.lsp.get_clients({ name = NAME, bufnr = bufnr, _uninitialized = true })
  if attached[1] then
    return attached[1]
  end
  local preview = package.loaded["handoff.preview"]
  if preview and preview.bufnr() == bufnr and preview.view and preview.view.client_id then
    local client = vim.lsp.get_client_by_id(preview.view.client_id)
    if client and not client:is_stopped() then
      return client
    end
  end
  local drafts = package.loaded["handoff.drafts"]
  local draft = drafts and drafts.drafts[bufnr]
  local clients = vim.lsp.get_clients({ name = NAME, _uninitialized = true })
  local name = vim.api.nvim_buf_get_name(bufnr)
  local here = (draft and draft.root)
    or ((name ~= "" and vim.bo[bufnr].buftype == "") and name)
    or vim.fn.getcwd()
  for _, client in ipairs(clients) do
    if contains(client.root_dir, here) then
      return client
    end
  end
  return nil
end

--- The workspace folder a new client would use for `bufnr`, and whether a root
--- marker found it (false: the current directory, for want of one).
function M.root_for(bufnr, config)
  local root = vim.fs.root(bufnr, config.root_markers or { ".handoff", ".git" })
  return root or vim.fn.getcwd(), root ~= nil
end

--- Folders outside any workspace root the user allowed state in (this Neovim only).
M.allowed = {}

--- Outside a workspace root, asks before the server may write `.handoff/` there.
local function allow_outside(root, config)
  if M.allowed[root] then
    return
  end
  local markers = table.concat(config.root_markers or { ".handoff", ".git" }, " or ")
  local prompt = ("No %s here: keep handoff state in %s/.handoff?"):format(markers, vim.fn.fnamemodify(root, ":~"))
  -- Asked holding the turn: the subcommands queued behind wait for the answer.
  local answer = async.await(function(cb)
    vim.ui.select({ "yes", "no" }, { prompt = prompt }, cb)
  end)
  if answer ~= "yes" then
    async.fail(
      "refused",
      ("Not started: nothing is written outside a workspace. Open a file in a folder with %s, "
        .. "or create %s/.handoff."):format(markers, vim.fn.fnamemodify(root, ":~"))
    )
  end
  M.allowed[root] = true
end

--- Starts a client for the current buffer's workspace (when vim.lsp.enable did not).
---@return integer? client_id
local function start(bufnr)
  local ok, config = pcall(function()
    return vim.lsp.config[NAME]
  end)
  if not ok or not config then
    async.fail("refused", "No 'handoff' LSP config: add editors/nvim to the runtimepath.")
  end
  config = vim.deepcopy(config)
  config.name = NAME
  if not config.root_dir then
    local root, marked = M.root_for(bufnr, config)
    if not marked then
      allow_outside(root, config)
    end
    config.root_dir = root
  end
  if type(config.cmd) == "table" and vim.fn.executable(config.cmd[1]) == 0 then
    async.fail(
      "refused",
      ("The handoff server %s is not executable: install handoff-lsp or set cmd with "
        .. 'vim.lsp.config("handoff", { cmd = {...} }).'):format(config.cmd[1])
    )
  end
  local normal = vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= ""
  -- Feedback while the server starts (the command's own message replaces it).
  local shown = ("Handoff: starting %s for %s…"):format(
    type(config.cmd) == "table" and vim.fs.basename(config.cmd[1]) or "the server",
    vim.fn.fnamemodify(config.root_dir, ":~")
  )
  vim.api.nvim_echo({ { require("handoff.msg").one_line(shown) } }, false, {})
  return vim.lsp.start(config, { bufnr = bufnr, attach = normal, silent = false })
end

--- The Markdown files checked as handoffs besides drafts and started texts, as the
--- server reads them (its `checkDocuments` setting).
M.DEFAULT_CHECK_DOCUMENTS = { "HANDOFF.md", "handoff*.md" }

local function setting(client, key)
  for _, where in ipairs({ client.settings or {}, client.config.init_options or {} }) do
    local section = where.handoff or where
    if type(section) == "table" and section[key] ~= nil then
      return section[key]
    end
  end
  return nil
end

--- Does `glob` (a pattern of `checkDocuments`) match the path `parts` (inside the
--- workspace) from its end, case ignored, as the server matches it?
local function matches(glob, parts)
  local want = {}
  for _, part in ipairs(vim.split(glob:gsub("\\", "/"), "/", { plain = true })) do
    if part ~= "" and part ~= "." and part ~= "**" then
      want[#want + 1] = part
    end
  end
  if #want == 0 or #want > #parts then
    return false
  end
  for i, part in ipairs(want) do
    local have = parts[#parts - #want + i]
    if not vim.regex("\\c" .. vim.fn.glob2regpat(part)):match_str(have) then
      return false
    end
  end
  return true
end

--- Is `path` a handoff document the server checks: a draft or started text under the
--- state folder, or a file the client's `checkDocuments` names?
function M.is_handoff_document(client, path)
  if not (path:match("%.md$") and contains(client.root_dir, path)) then
    return false
  end
  local inside = vim.fs.normalize(path):sub(#vim.fs.normalize(client.root_dir) + 2)
  local parts = vim.split(inside, "/", { plain = true })
  local state = setting(client, "stateFolder") or ".handoff"
  if #parts >= 3 and parts[#parts - 2] == state and (parts[#parts - 1] == "drafts" or parts[#parts - 1] == "started") then
    return true
  end
  local globs = setting(client, "checkDocuments")
  for _, glob in ipairs(type(globs) == "table" and globs or M.DEFAULT_CHECK_DOCUMENTS) do
    if type(glob) == "string" and matches(glob, parts) then
      return true
    end
  end
  return false
end

--- Attaches the running handoff client of the buffer's workspace to a handoff document
--- (a draft, a started text, HANDOFF.md, what `checkDocuments` names): the server then
--- checks its claims as you edit and reports them as diagnostics, with code actions and
--- lenses. Starts nothing (vim.lsp.enable("handoff") does).
function M.attach_document(bufnr)
  local client = M.get(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if not client or client:is_stopped() or vim.lsp.buf_is_attached(bufnr, client.id) then
    return
  end
  if name == "" or not M.is_handoff_document(client, vim.fn.fnamemodify(name, ":p")) then
    return
  end
  vim.lsp.buf_attach_client(bufnr, client.id)
  -- The lenses (what the check found; Start in an agent; Prepare) follow its findings.
  local refresh = function()
    if vim.api.nvim_buf_is_valid(bufnr) and vim.lsp.buf_is_attached(bufnr, client.id) then
      vim.lsp.codelens.refresh({ bufnr = bufnr })
    end
  end
  vim.api.nvim_create_autocmd("DiagnosticChanged", { buffer = bufnr, callback = refresh })
  vim.defer_fn(refresh, 200)
end

--- Runs an editor command a lens of the server names (the server has none of these:
--- starting an agent opens a terminal here): Start in an agent, Prepare, the findings.
function M.lens_command(command)
  local args = command.arguments or {}
  local buf = type(args[1]) == "string" and vim.uri_to_bufnr(args[1]) or 0
  if not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local line = ({
    ["handoffUi.startSessionFromDraft"] = "start " .. (args[2] or ""),
    ["handoffUi.prepareFromDraft"] = "prepare",
  })[command.command]
  vim.api.nvim_buf_call(buf, function()
    if line then
      require("handoff").run(line)
    else -- handoffUi.showChecks: the document's findings in its location list
      vim.diagnostic.setloclist({ open = true, title = "Handoff: claims of " .. vim.fn.expand("%:t") })
    end
  end)
end

local ready_waiters = {}

--- Calls `cb(ok)` once `client` is initialised (or has failed to), in the order asked.
function M.when_ready(client, cb)
  local waiters = ready_waiters[client.id]
  if waiters then
    table.insert(waiters, cb)
    return
  end
  waiters = { cb }
  ready_waiters[client.id] = waiters
  local timeout = (vim.g.handoff_ui or {}).start_timeout_ms or 15000
  local waited, timer = 0, assert(vim.uv.new_timer())
  timer:start(0, 20, function()
    waited = waited + 20
    local up = client.initialized
    if up or waited >= timeout or client:is_stopped() then
      timer:stop()
      timer:close()
      vim.schedule(function()
        ready_waiters[client.id] = nil
        local ok = up and not client:is_stopped()
        for _, waiter in ipairs(waiters) do
          waiter(ok)
        end
      end)
    end
  end)
end

--- Waits (in a coroutine) for an initialised handoff client, starting one if needed.
---@return vim.lsp.Client
function M.ensure(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local client = M.get(bufnr)
  if not client then
    local id = start(bufnr)
    client = id and vim.lsp.get_client_by_id(id)
    if not client then
      async.fail("refused", "The handoff language server did not start; see :checkhealth handoff.")
    end
  end
  if not client.initialized then
    local ready = async.await(function(cb)
      M.when_ready(client, cb)
    end)
    if not ready then
      async.fail("refused", "The handoff language server did not initialise; see :checkhealth handoff.")
    end
  end
  require("handoff.settings").sync(client)
  return client
end

--- Whether the server advertises `command`.
function M.supports(client, command)
  local provider = client.server_capabilities.executeCommandProvider
  return type(provider) == "table" and vim.tbl_contains(provider.commands or {}, command)
end

--- Neovim's RPC layer swallows RequestCancelled answers (the handler is never called),
--- so a request that completes without its handler having run ended as cancelled.
local function watch_completions()
  if M._watching then
    return
  end
  M._watching = true
  vim.api.nvim_create_autocmd("LspRequest", {
    group = vim.api.nvim_create_augroup("handoff.requests", { clear = true }),
    callback = function(ev)
      local data = ev.data or {}
      local entry = (M.inflight[data.client_id] or {})[data.request_id]
      if not entry or (data.request or {}).type ~= "complete" then
        return
      end
      -- The result handler, if any, is already queued; run after it.
      vim.schedule(function()
        entry.finish({
          kind = "cancelled",
          code = "cancelled",
          message = "The command was cancelled; nothing was written.",
        })
      end)
    end,
  })
end

--- Runs one server command with one object argument; calls `on_done(err, result)` once.
--- Returns the request id (for cancelling), or nil when nothing was sent.
--- Reports are rendered for a terminal: Markdown read as text (no HTML entities).
local function for_terminal(command, params)
  if command == "handoff.report" and type(params) == "table" and params.render == nil then
    params = vim.tbl_extend("force", params, { render = "terminal" })
  end
  return params
end

--- Work-done tokens of background refreshes: their progress is not echoed.
M.quiet_tokens = {}

--- `opts.quiet`: a background refresh (its progress is not echoed).
function M.exec(client, command, params, on_done, opts)
  params = for_terminal(command, params)
  if not M.supports(client, command) then
    on_done({
      kind = "refused",
      message = ("The handoff server does not offer %s; update handoff-lsp."):format(command),
    })
    return nil
  end
  watch_completions()
  if params == nil or (type(params) == "table" and next(params) == nil) then
    params = vim.empty_dict() -- `{}` would go out as a JSON list
  end
  local inflight = M.inflight[client.id] or {}
  M.inflight[client.id] = inflight
  local request_id
  local finished = false
  local function finish(err, result)
    if finished then
      return
    end
    finished = true
    if request_id then
      inflight[request_id] = nil
    end
    on_done(err, result)
  end
  local request = { command = command, arguments = { params } }
  if M.CANCELLABLE[command] then
    -- Our own work-done token: the server shows progress of reports only on a token
    -- the client chose (it reaches vim.lsp.status() and :Handoff cancel all the same).
    M._tokens = (M._tokens or 0) + 1
    request.workDoneToken = ("handoff.nvim/%d"):format(M._tokens)
    if opts and opts.quiet then
      M.quiet_tokens[request.workDoneToken] = true
    end
  end
  -- client:request, not client:exec_cmd: exec_cmd drops the workDoneToken.
  local ok, id = client:request(EXECUTE, request, function(err, result)
    if not err then
      return finish(nil, result)
    end
    local data = type(err.data) == "table" and err.data or {}
    local cancelled = err.code == CANCELLED or data.code == "cancelled"
    finish({
      kind = cancelled and "cancelled" or "refused",
      code = data.code or (cancelled and "cancelled") or nil,
      message = M.for_neovim(err.message or "The handoff server refused the command.", data),
      data = data,
    })
  end, vim.api.nvim_get_current_buf())
  request_id = ok and id or nil
  if request_id then
    inflight[request_id] = { command = command, finish = finish }
  elseif not finished then
    finish({ kind = "refused", message = ("%s was not sent to the server."):format(command) })
  end
  return request_id
end

--- A refusal that names a missing setting, said the Neovim way: the setting is set in
--- vim.g.handoff (the command-line flag the server's words offer is the CLI's, not a
--- :Handoff flag).
function M.for_neovim(message, data)
  local setting = type(data) == "table" and data.setting
  if type(setting) ~= "string" then
    return message
  end
  local text = message:gsub(" %(or %-%-[%w%-]+%)", "")
  text = text:gsub("set " .. vim.pesc(setting), "set vim.g.handoff." .. setting:gsub("%%", "%%%%"), 1)
  return text
end

--- Runs a command inside a coroutine; a refusal or cancellation ends the subcommand.
function M.call(client, command, params)
  local err, result = async.await(function(cb)
    M.exec(client, command, params, cb)
  end)
  if err then
    async.fail(err.kind, err.message, err.code)
  end
  return result
end

--- Runs a command and waits for it synchronously (completion, health); nil on failure.
function M.call_sync(client, command, params, timeout_ms)
  params = for_terminal(command, params)
  if not client or not client.initialized or not M.supports(client, command) then
    return nil
  end
  if params == nil or (type(params) == "table" and next(params) == nil) then
    params = vim.empty_dict()
  end
  local response = client:request_sync(EXECUTE, {
    command = command,
    arguments = { params },
  }, timeout_ms or 2000)
  if not response or response.err then
    return nil, response and response.err
  end
  return response.result
end

--- Records cancellable progress of handoff clients (LspProgress autocmd).
function M.on_progress(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  if not client or client.name ~= NAME then
    return
  end
  local params = ev.data.params or {}
  local value = params.value or {}
  local tokens = M.progress[client.id] or {}
  M.progress[client.id] = tokens
  if value.kind == "begin" and value.cancellable then
    tokens[params.token] = value.title or "handoff"
  elseif value.kind == "end" then
    tokens[params.token] = nil
  end
end

--- Whether progress on `token` belongs to a background refresh (not echoed).
function M.is_quiet(token, kind)
  local quiet = M.quiet_tokens[token] == true
  if quiet and kind == "end" then
    M.quiet_tokens[token] = nil
  end
  return quiet
end

--- Commands worth cancelling (the others are short and atomic).
M.CANCELLABLE = {
  ["handoff.generate"] = true,
  ["handoff.report"] = true,
  ["handoff.sessions"] = true,
  ["handoff.check"] = true,
}

--- Cancels running handoff work: the cancellable progress tokens and the requests.
--- Returns how many requests or tokens were cancelled.
function M.cancel()
  local only = M.CANCELLABLE
  local count = 0
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    for token in pairs(M.progress[client.id] or {}) do
      client:notify("window/workDoneProgress/cancel", { token = token })
      M.progress[client.id][token] = nil
      count = count + 1
    end
    for id, req in pairs(M.inflight[client.id] or {}) do
      if only[req.command] and not req.cancelled then
        req.cancelled = true
        client:cancel_request(id)
        count = count + 1
      end
    end
  end
  return count
end

--- Whether any handoff command is running.
function M.busy()
  for _, reqs in pairs(M.inflight) do
    if next(reqs) then
      return true
    end
  end
  return false
end

return M
