-- handoff.nvim: the :Handoff command over the handoff-lsp language server.
-- No setup() needed: the plugin/ file defines the command; options live in
-- vim.g.handoff (server settings) and vim.g.handoff_ui (this plugin's UI).

local args = require("handoff.args")
local async = require("handoff.async")
local client_mod = require("handoff.client")
local commands = require("handoff.commands")
local msg = require("handoff.msg")

local M = {}

M.subcommands = commands.subcommands

local function names()
  local out = vim.tbl_keys(M.subcommands)
  table.sort(out)
  return out
end

local function done_event(data)
  vim.api.nvim_exec_autocmds("User", { pattern = "HandoffDone", modeline = false, data = data })
end

local function report_failure(sub, err, trace)
  if async.is_failure(err) then
    if err.kind == "cancelled" then
      msg.notify(("Handoff %s cancelled: %s"):format(sub, err.message), vim.log.levels.WARN)
    elseif err.kind == "refused" then
      msg.notify(("Handoff %s: %s"):format(sub, err.message), vim.log.levels.ERROR)
    end
    return { subcommand = sub, ok = false, kind = err.kind, code = err.code, message = err.message }
  end
  local message = tostring(err)
  msg.notify(("Handoff %s failed: %s"):format(sub, message), vim.log.levels.ERROR)
  vim.lsp.log.error("handoff", trace or message)
  return { subcommand = sub, ok = false, kind = "error", message = message }
end

--- Runs `:Handoff {line}`. The work is asynchronous; a User HandoffDone autocmd
--- (data: { subcommand, ok, kind?, code?, message?, result? }) fires when it ends.
---@param line string the arguments after :Handoff
function M.run(line)
  local words = args.split(line or "")
  local sub = table.remove(words, 1)
  if not sub then
    -- :Handoff alone: pick a subcommand.
    vim.ui.select(names(), {
      prompt = "Handoff",
      format_item = function(name)
        return ("%-9s %s"):format(name, M.subcommands[name].desc or "")
      end,
    }, function(choice)
      if choice then
        M.run(choice)
      end
    end)
    return
  end
  local spec = M.subcommands[sub]
  if not spec then
    local unknown = ("Handoff: unknown subcommand %q; one of %s."):format(sub, table.concat(names(), ", "))
    msg.notify(unknown, vim.log.levels.ERROR)
    done_event({ subcommand = sub, ok = false, kind = "refused", message = unknown })
    return
  end
  local parsed, err = args.parse(words, spec.flags)
  if not parsed then
    msg.notify(("Handoff %s: %s."):format(sub, err), vim.log.levels.ERROR)
    done_event({ subcommand = sub, ok = false, kind = "refused", message = err })
    return
  end
  local extra = commands.extra_words(sub, spec, parsed)
  if extra then
    msg.notify(("Handoff %s: %s"):format(sub, extra), vim.log.levels.ERROR)
    done_event({ subcommand = sub, ok = false, kind = "refused", message = extra })
    return
  end
  parsed.empty = #words == 0
  async.run(function()
    local ctx = {}
    if not spec.local_only then
      async.take_turn()
      ctx.client = client_mod.ensure(0)
    end
    return spec.run(ctx, parsed)
  end, function(ok, value, trace)
    if ok then
      done_event({ subcommand = sub, ok = true, result = value })
    else
      done_event(report_failure(sub, value, trace))
    end
  end)
end

-- Completion ---------------------------------------------------------------------

local cache = {}

local function cached(key, fetch)
  local hit = cache[key]
  local now = vim.uv.now()
  if hit and now - hit.at < 3000 then
    return hit.value
  end
  local value = fetch() or {}
  cache[key] = { at = now, value = value }
  return value
end

local function revisions_of(scope)
  return cached("rev:" .. (scope or ""), function()
    local client = client_mod.get(0)
    local params = { kind = "history" }
    if scope then
      params.scope = scope
    end
    local result = client_mod.call_sync(client, "handoff.report", params)
    local out = {}
    for _, rev in ipairs(result and result.data and result.data.revisions or {}) do
      out[#out + 1] = rev.revision
    end
    return out
  end)
end

local function sessions()
  return cached("sessions", function()
    local result = client_mod.call_sync(client_mod.get(0), "handoff.sessions", vim.empty_dict())
    local out = {}
    for _, s in ipairs(result and result.sessions or {}) do
      out[#out + 1] = s.path
    end
    return out
  end)
end

local function flag_values(sub, flag, lead, scope)
  if flag == "session" then
    return sessions()
  elseif flag == "provider" then
    return commands.PROVIDERS
  elseif flag == "format" then
    return commands.FORMATS
  elseif flag == "disposition" then
    return commands.DISPOSITIONS
  elseif flag == "status" then
    return sub == "outcome" and commands.OUTCOME_STATUSES or commands.ACK_STATUSES
  elseif flag == "revision" then
    return revisions_of(scope)
  elseif flag == "check" then
    local name = lead:match("^(.*=)")
    if name then
      return vim.tbl_map(function(s)
        return name .. s
      end, commands.CHECK_STATUSES)
    end
    return {}
  elseif flag == "document" then
    return vim.list_extend({ "%" }, vim.fn.getcompletion(lead, "file"))
  end
  return {}
end

local function positional_values(sub, index, positional, lead, scope)
  if sub == "continue" or sub == "ack" then
    local mode = positional[1]
    if index == 1 then
      return sub == "ack" and { "exact", "prepared" } or commands.MODES
    end
    if mode == "exact" and index == 2 then
      return revisions_of(scope)
    end
    if sub == "ack" then
      local status_at = mode == "exact" and 3 or 2
      if index == status_at then
        return commands.ACK_STATUSES
      end
    end
    if mode == "prepared" and index == 2 then
      return vim.fn.getcompletion(lead, "file")
    end
  elseif sub == "outcome" and index == 1 then
    return commands.OUTCOME_STATUSES
  elseif sub == "start" and index == 1 then
    return commands.AGENTS
  elseif sub == "report" then
    if index == 1 then
      return commands.REPORT_KINDS
    elseif index == 2 and positional[1] == "handoff" then
      return revisions_of(scope)
    end
  elseif (sub == "prepare" or sub == "commit") and index == 1 then
    return vim.fn.getcompletion(lead, "file")
  end
  return {}
end

--- Completion for :Handoff: subcommands, their flags, and their values (sessions,
--- revisions, statuses, modes, report kinds).
function M.complete(arglead, cmdline, cursorpos)
  local before = cmdline:sub(1, cursorpos)
  before = before:gsub("^%s*%S+%s*", "", 1)
  local words, trailing = args.split(before)
  local lead = trailing and "" or (table.remove(words) or "")
  local candidates
  if #words == 0 then
    candidates = names()
  else
    local sub = words[1]
    local spec = M.subcommands[sub]
    if not spec then
      return {}
    end
    local positional, value_flag, scope = {}, nil, nil
    for i = 2, #words do
      local word = words[i]
      if value_flag then
        if value_flag == "scope" then
          scope = word
        end
        value_flag = nil
      else
        local name = word:match("^%-%-([%w%-]+)$")
        if name and spec.flags[name] and spec.flags[name] ~= "bool" then
          value_flag = name
        elseif not name then
          positional[#positional + 1] = word
        end
      end
    end
    if value_flag then
      candidates = flag_values(sub, value_flag, lead, scope)
    elseif vim.startswith(lead, "-") then
      candidates = {}
      for flag in pairs(spec.flags) do
        candidates[#candidates + 1] = "--" .. flag
      end
      table.sort(candidates)
    else
      candidates = positional_values(sub, #positional + 1, positional, lead, scope)
    end
  end
  local out = {}
  for _, c in ipairs(candidates) do
    if vim.startswith(c, lead) then
      out[#out + 1] = c:find("[%s\"'\\]") and vim.fn.escape(c, " \\\"'") or c
    end
  end
  return out
end

--- Whether a handoff command is running (for statuslines).
function M.busy()
  return client_mod.busy()
end

return M
