-- Test driver loaded inside a headless Neovim: answers vim.ui prompts from a queue,
-- records notifications, runs :Handoff subcommands to completion and writes what it saw
-- to $HANDOFF_TEST_OUT as JSON for the pytest side to assert on.

local H = {
  notes = {},
  prompts = {},
  progress = {},
  results = {},
  answers = {},
}

local OUT = assert(os.getenv("HANDOFF_TEST_OUT"), "HANDOFF_TEST_OUT is not set")

--- Every text a preview showed (each render and re-render), for the checks every
--- scenario gets (no HTML entity, no file:// link: the preview is read as text).
H.shown = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "HandoffPreview",
  callback = function(ev)
    local buf = ev.data and ev.data.bufnr
    if buf and vim.api.nvim_buf_is_valid(buf) then
      local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      table.insert(H.shown, { title = ev.data.title, text = text })
    end
  end,
})
local TIMEOUT = tonumber(os.getenv("HANDOFF_TEST_TIMEOUT_MS") or "20000")

local real_notify = vim.notify
local show_notes = os.getenv("HANDOFF_REAL_NOTIFY") == "1"
vim.notify = function(msg, level, opts)
  table.insert(H.notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
  if show_notes then
    real_notify(msg, level, opts)
  end
end

--- The message area as a UI sees it (vim.ui_attach with ext_messages): the text of
--- the last message shown, "" after the area was cleared.
H.area = nil
H.area_events = {}
function H.track_messages()
  H.area = ""
  local ns = vim.api.nvim_create_namespace("handoff.test.messages")
  vim.ui_attach(ns, { ext_messages = true }, function(event, kind, content)
    if event == "msg_show" then
      local text = {}
      for _, chunk in ipairs(content or {}) do
        text[#text + 1] = chunk[2]
      end
      H.area = vim.trim(table.concat(text))
      table.insert(H.area_events, { kind = kind, text = H.area })
    elseif event == "msg_clear" then
      H.area = ""
      table.insert(H.area_events, { kind = "clear", text = "" })
    end
  end)
end

local function next_answer(prompt)
  table.insert(H.prompts, prompt or "")
  if #H.answers == 0 then
    error("unexpected prompt: " .. tostring(prompt))
  end
  return table.remove(H.answers, 1)
end

vim.ui.input = function(opts, on_confirm)
  local answer = next_answer(opts and opts.prompt)
  on_confirm(answer ~= vim.NIL and answer or nil)
end

--- Every vim.ui.select menu shown: { prompt, labels }.
H.menus = {}

vim.ui.select = function(items, opts, on_choice)
  local answer = next_answer(opts and opts.prompt)
  local format = opts and opts.format_item or tostring
  table.insert(H.menus, { prompt = opts and opts.prompt, labels = vim.tbl_map(format, items) })
  for i, item in ipairs(items) do
    local label = format(item)
    if
      answer == item
      or (type(answer) == "string" and vim.startswith(label, answer))
      or (type(answer) == "function" and answer(item, label))
    then
      return on_choice(item, i)
    end
  end
  error(("no choice matches %s among: %s"):format(vim.inspect(answer), vim.inspect(vim.tbl_map(format, items))))
end

vim.api.nvim_create_autocmd("LspProgress", {
  callback = function(ev)
    local value = (ev.data.params or {}).value or {}
    table.insert(H.progress, {
      kind = value.kind,
      title = value.title,
      message = value.message,
      cancellable = value.cancellable,
      token = ev.data.params.token,
      status = vim.lsp.status(),
    })
  end,
})

local done = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "HandoffDone",
  callback = function(ev)
    table.insert(done, ev.data)
  end,
})

local previews = 0
vim.api.nvim_create_autocmd("User", {
  pattern = "HandoffPreview",
  callback = function()
    previews = previews + 1
  end,
})

--- Queues answers for the next prompts (strings pick the select item whose label starts so).
function H.answer(...)
  vim.list_extend(H.answers, { ... })
end

--- Runs :Handoff {line} and waits for it to finish; returns the HandoffDone data.
function H.handoff(line, timeout)
  local before = #done
  vim.cmd("Handoff " .. line)
  local ok = vim.wait(timeout or TIMEOUT, function()
    return #done > before
  end, 10)
  if not ok then
    error(("timed out: :Handoff %s"):format(line))
  end
  return done[before + 1]
end

--- Starts :Handoff {line} without waiting; returns a function that waits for it and
--- one that tells whether it has finished (other subcommands may finish meanwhile).
function H.start(line)
  local before = #done
  local sub = line:match("^%S+")
  vim.cmd("Handoff " .. line)
  local function mine()
    for i = before + 1, #done do
      if done[i].subcommand == sub then
        return done[i]
      end
    end
  end
  local function finished()
    return mine() ~= nil
  end
  return function(timeout)
    vim.wait(timeout or TIMEOUT, finished, 10)
    return mine()
  end, finished
end

--- Waits for the next HandoffDone of `sub` started by something else (a key).
function H.wait_done(sub, timeout)
  local before = #done
  local found
  H.wait(function()
    for i = before + 1, #done do
      if done[i].subcommand == sub then
        found = done[i]
        return true
      end
    end
    return false
  end, timeout, "HandoffDone of " .. sub)
  return found
end

function H.wait(pred, timeout, what)
  if not vim.wait(timeout or TIMEOUT, pred, 10) then
    error("timed out waiting for " .. (what or "a condition"))
  end
end

--- The number of preview renders so far (initial shows and refreshes).
function H.preview_count()
  return previews
end

--- The preview buffer's text, or nil.
function H.preview()
  local buf = require("handoff.preview").bufnr()
  if not buf then
    return nil
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

function H.record(key, value)
  H.results[key] = value
end

local function write(status, err)
  local payload = {
    status = status,
    error = err,
    results = H.results,
    notes = H.notes,
    prompts = H.prompts,
    progress = H.progress,
    unanswered = #H.answers,
    shown = H.shown,
    -- The plugin's messages whole (what :Handoff log shows; a notification may be cut).
    history = package.loaded["handoff.msg"] and package.loaded["handoff.msg"].history or {},
    -- :messages holds what the LSP client echoed (window/showMessage).
    messages = vim.api.nvim_exec2("messages", { output = true }).output,
  }
  local ok, encoded = pcall(vim.json.encode, payload)
  if not ok then
    encoded = vim.json.encode({ status = "error", error = "cannot encode results: " .. encoded })
  end
  local file = assert(io.open(OUT, "w"))
  file:write(encoded)
  file:close()
end

--- Writes the results and quits Neovim.
function H.finish(ok, err)
  write(ok and "ok" or "error", not ok and tostring(err) or nil)
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop(true)
  end
  vim.cmd(ok and "qall!" or "cquit! 3")
end

--- Runs the scenario, writes the results, and quits Neovim.
function H.main(scenario)
  local ok, err = xpcall(scenario, debug.traceback)
  H.finish(ok, err)
end

-- Asynchronous scenarios: each step returns to Neovim's main loop, as a user's
-- commands do (messages, modes and focus then behave as they do for a user).

local function resume(co, ...)
  local ok, err = coroutine.resume(co, ...)
  if not ok then
    H.finish(false, debug.traceback(co, tostring(err)))
  end
end

--- Runs `scenario` in a coroutine that may H.sleep / H.until / H.run; quits at its end.
function H.async(scenario)
  resume(coroutine.create(function()
    local ok, err = xpcall(scenario, debug.traceback)
    H.finish(ok, err)
  end))
end

--- Gives the main loop `ms` milliseconds (inside H.async).
function H.sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    resume(co)
  end, ms)
  coroutine.yield()
end

--- Sleeps until `pred()` holds (inside H.async).
function H.until_(pred, timeout, what)
  local waited = 0
  while not pred() do
    if waited >= (timeout or TIMEOUT) then
      error("timed out waiting for " .. (what or "a condition"))
    end
    H.sleep(20)
    waited = waited + 20
  end
end

--- :Handoff {line} from the main loop, waited for (inside H.async).
function H.run(line, timeout)
  local before = #done
  vim.cmd("Handoff " .. line)
  H.until_(function()
    return #done > before
  end, timeout, ":Handoff " .. line)
  return done[before + 1]
end

return H
