-- The :Handoff subcommands: each collects its arguments (from the command line, else
-- through vim.ui.input / vim.ui.select), calls one server command and shows the result.

local async = require("handoff.async")
local client_mod = require("handoff.client")
local msg = require("handoff.msg")
local preview = require("handoff.preview")
local drafts = require("handoff.drafts")

local M = {}

M.ACK_STATUSES = { "accepted", "needs_clarification", "declined" }
M.OUTCOME_STATUSES = { "succeeded", "partial", "blocked", "failed", "cancelled", "unknown" }
M.CHECK_STATUSES = { "passed", "failed", "skipped", "timed_out" }
M.DISPOSITIONS = { "continuable", "blocked", "done" }
M.REPORT_KINDS = { "continuity", "history", "handoff", "lineage", "source" }
M.MODES = { "latest", "exact", "prepared" }
M.PROVIDERS = { "extractive", "openai", "anthropic", "command" }
M.FORMATS = { "auto", "pi", "claude", "codex", "opencode", "gemini", "qwen" }
M.AGENTS = { "pi", "omp", "claude", "codex", "opencode", "gemini", "qwen" }
M.AGENT_LABELS = { pi = "pi", omp = "omp", claude = "Claude Code", codex = "Codex", opencode = "opencode", gemini = "Gemini CLI", qwen = "Qwen Code" }
M.START_OPEN = { "terminal", "none" }

--- The four acceptance checks: wire key, flag, question.
M.CHECKS = {
  { "evidenceAvailable", "evidence-available", "Is the cited evidence available (files and Sources read)?" },
  { "liveStateConfirmed", "live-state-confirmed", "Does the live workspace match the handoff?" },
  { "capabilityConfirmed", "capability-confirmed", "Can you do the next actions (tools, access)?" },
  { "authorizationConfirmed", "authorization-confirmed", "Has the user authorised you to continue?" },
}

--- What this Neovim remembers per workspace: the last prepared handoff, the last
--- continued target, the last acknowledgement receipt.
M.memory = {}

--- Draft buffers opened by :Handoff generate (kept by handoff.drafts).
M.drafts = drafts.drafts

local function info(text)
  msg.notify(text, vim.log.levels.INFO)
end

local function warn(text)
  msg.notify(text, vim.log.levels.WARN)
end

local function remember(ctx)
  local key = ctx.client.root_dir or ("client:" .. ctx.client.id)
  M.memory[key] = M.memory[key] or {}
  return M.memory[key]
end

local function with_scope(a, params)
  if a.scope then
    params.scope = a.scope
  end
  return params
end

--- Neovim's LSP client drops `null` object members on decode; a PreparedHandoff must
--- come back with exactly its keys, so restore the nullable ones.
function M.restore_prepared(prepared)
  if type(prepared) ~= "table" then
    return prepared
  end
  for _, key in ipairs({ "base", "boundary" }) do
    if prepared[key] == nil then
      prepared[key] = vim.NIL
    end
  end
  return prepared
end

--- "sha256:0123456789abcdef…" → "sha256:0123456789ab".
local function short(digest)
  return type(digest) == "string" and digest:sub(1, 19) or "?"
end

local function nonempty(s)
  return type(s) == "string" and vim.trim(s) ~= ""
end

local function split_items(s)
  local items = {}
  for item in (s or ""):gmatch("[^;]+") do
    if nonempty(item) then
      items[#items + 1] = vim.trim(item)
    end
  end
  return items
end

--- A fact typed as its two parts, on one line: the server parses "text :: cite, cite".
local function fact_line(text, cites)
  return ("%s :: %s"):format(vim.trim(text or ""), cites or "")
end

--- The current file relative to the workspace, if it is inside it.
local function current_file(ctx)
  local name = vim.api.nvim_buf_get_name(0)
  local root = ctx.client.root_dir
  if name == "" or vim.bo.buftype ~= "" or not root then
    return nil
  end
  name, root = vim.fs.normalize(name), vim.fs.normalize(root)
  if vim.startswith(name, root .. "/") then
    return name:sub(#root + 2)
  end
  return nil
end

local function read_json(path)
  local file = io.open(vim.fn.expand(path), "r")
  if not file then
    async.fail("refused", ("Cannot read %s."):format(path))
  end
  local text = file:read("*a")
  file:close()
  local ok, value = pcall(vim.json.decode, text)
  if not ok or type(value) ~= "table" then
    async.fail("refused", ("%s is not a JSON object."):format(path))
  end
  return value
end

local function ask_yes(question)
  local answer = async.select({ "yes", "no" }, { prompt = question })
  return answer == "yes"
end

local function revisions(ctx, scope)
  local result = client_mod.call(ctx.client, "handoff.report", with_scope({ scope = scope }, { kind = "history" }))
  local out = {}
  for _, rev in ipairs((result.data or {}).revisions or {}) do
    out[#out + 1] = rev
  end
  return out
end

--- Asks for a committed revision (newest first); `hint` is listed first when present.
local function pick_revision(ctx, a, hint)
  local revs = revisions(ctx, a.scope)
  if #revs == 0 then
    async.fail("refused", "There is no committed revision in this scope yet.")
  end
  table.sort(revs, function(x, y)
    if x.revision == hint then
      return y.revision ~= hint
    end
    return false
  end)
  local item = async.select(revs, {
    prompt = "Revision",
    format_item = function(rev)
      local content = rev.content or {}
      local mark = rev.revision == hint and " (continued)" or ""
      return ("%s%s  %s"):format(rev.revision, mark, content.objective or "")
    end,
  })
  return item.revision
end

--- A view that renders `command(params)` with `render(result)` and re-renders on changes.
local function show_view(ctx, title, command, params, render)
  local client = ctx.client
  local result = client_mod.call(client, command, params)
  if type(result.warnings) == "table" and #result.warnings > 0 then
    warn("Handoff " .. title .. ": " .. table.concat(result.warnings, "; "))
  end
  local text = render(result)
  -- Replaces the progress echo, which would otherwise still say "Rendering…".
  vim.api.nvim_echo({ { msg.one_line(("Handoff %s: in the preview (g? lists its keys)."):format(title)) } }, false, {})
  preview.show(text, {
    title = title,
    client_id = client.id,
    refresh = function(done)
      client_mod.exec(client, command, params, function(err, result)
        done(not err and render(result) or nil)
      end, { quiet = true })
    end,
  })
end

local function report_markdown(result)
  return result.markdown or ""
end

local function show_prepared(ctx, prepared)
  show_view(ctx, "handoff (prepared)", "handoff.report", {
    scope = prepared.scope,
    kind = "handoff",
    prepared = prepared,
  }, report_markdown)
end

--- The refusal of words a subcommand does not take (nil when there are none):
--- `spec.nargs` is the most positional words it takes (a number, or a function of
--- the parsed arguments); nil takes any number.
function M.extra_words(sub, spec, a)
  local most = spec.nargs
  if type(most) == "function" then
    most = most(a)
  end
  if most == nil or #a.positional <= most then
    return nil
  end
  local words = vim.list_slice(a.positional, most + 1)
  local text = ("unexpected %s: %s takes %s"):format(
    table.concat(vim.tbl_map(function(w)
      return ("%q"):format(w)
    end, words), " "),
    sub,
    most == 0 and "no words" or (most == 1 and "one word" or ("at most %d words"):format(most))
  )
  if vim.tbl_contains(words, "|") then
    text = text .. " (| does not chain :Handoff commands: run each on a line of its own)"
  end
  return text .. "."
end

--- "No agent sessions of <workspace> in <the folders searched>." (where it looked).
function M.no_sessions(root, searched)
  local where = {}
  for _, folder in ipairs(type(searched) == "table" and searched or {}) do
    where[#where + 1] = vim.fn.fnamemodify(folder, ":~")
  end
  local text = ("No agent sessions of %s"):format(vim.fn.fnamemodify(root or vim.fn.getcwd(), ":~"))
  if #where > 0 then
    text = text .. " in " .. table.concat(where, ", ")
  end
  return text .. " (a session belongs to the folder it was started in)."
end

-- Subcommands ------------------------------------------------------------------

M.subcommands = {}
local S = M.subcommands

S.generate = {
  desc = "generate a handoff document from an agent session",
  flags = { session = "value", provider = "value", format = "value", ["no-start"] = "bool", scope = "value" },
  run = function(ctx, a)
    local session, focus = a.session, nil
    if #a.positional > 0 then
      focus = table.concat(a.positional, " ")
    end
    if not session then
      local found = client_mod.call(ctx.client, "handoff.sessions", vim.empty_dict())
      local list = found.sessions or {}
      local item = async.select(list, {
        prompt = "Agent session to hand off",
        empty = M.no_sessions(ctx.client.root_dir, found.searched),
        format_item = function(s)
          return ("%s  %-6s %s (%d messages)"):format(
            s.updatedAt or "",
            s.format or "",
            s.title or vim.fs.basename(s.path),
            s.messageCount or 0
          )
        end,
      })
      session = item.path
      if not focus then
        focus = async.input({ prompt = "Focus (optional): " })
      end
    end
    local params = with_scope(a, { session = session })
    if nonempty(focus) then
      params.focus = focus
    end
    if a.provider then
      params.provider = a.provider
    end
    if a.format then
      params.format = a.format
    end
    if a["no-start"] then
      params.startSession = false
    end
    local result = async.without_turn(function()
      return client_mod.call(ctx.client, "handoff.generate", params)
    end)
    local buf = drafts.open_draft(ctx, result)
    -- One line (no "Press ENTER"); the details are in the draft and b:handoff_draft.
    local missing = result.missingSections or {}
    msg.notify_parts(
      "Handoff: draft ready in a split",
      #missing > 0 and (" (missing " .. table.concat(missing, ", ") .. ")") or "",
      "; edit it, then :Handoff start."
    )
    if type(result.warnings) == "table" and #result.warnings > 0 then
      warn("Handoff generate: " .. table.concat(result.warnings, "; "))
    end
    if type(result.started) == "table" and result.started.command then
      -- generation.startSession = true: the one-step flow started a session already.
      drafts.open_started(ctx, result.started, buf, true)
    end
    return result
  end,
}

S.start = {
  nargs = 1,
  desc = "start an agent session from the draft buffer you are in (or --revision REV)",
  flags = { revision = "value", scope = "value" },
  run = function(ctx, a)
    local agent = a.positional[1]
    if agent and not vim.tbl_contains(M.AGENTS, agent) then
      async.fail("refused", ("%q is not an agent: one of %s."):format(agent, table.concat(M.AGENTS, ", ")))
    end
    local buf = vim.api.nvim_get_current_buf()
    local entry = drafts.draft_of(buf)
    local params = {}
    if a.revision then
      params.revision = a.revision
    elseif entry then
      params.document = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      params.generation = entry.generation
      params.scope = entry.scope
    elseif vim.bo[buf].filetype == "markdown" and vim.bo[buf].buftype == "" then
      -- A handoff written by hand (HANDOFF.md): its text, with no generation behind it.
      params.document = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
    else
      async.fail(
        "refused",
        "Not a draft buffer: run :Handoff start in a buffer :Handoff generate opened "
          .. "or a Markdown handoff (or :Handoff start --revision REV)."
      )
    end
    if a.scope then
      params.scope = a.scope
    end
    params.agent = agent
    local result = client_mod.call(ctx.client, "handoff.startSession", params)
    drafts.open_started(ctx, result, entry and buf or nil)
    return result
  end,
}

S.sessions = {
  nargs = 0,
  desc = "list this workspace's agent sessions, newest first",
  flags = {},
  run = function(ctx)
    -- The server writes the list (templates/sessions.md.j2).
    show_view(ctx, "sessions", "handoff.sessions", { render = "terminal" }, report_markdown)
  end,
}

S.contract = {
  nargs = 0,
  desc = "record a Work Contract",
  flags = { objective = "value", ["in-scope"] = "list", ["out-of-scope"] = "list", acceptance = "list", scope = "value" },
  run = function(ctx, a)
    local interactive = a.empty
    local objective = a.objective or async.input({ prompt = "Objective: " })
    local in_scope = a["in-scope"] or split_items(async.input({ prompt = "In scope (separate items with ;): " }))
    local out_scope = a["out-of-scope"]
    if not out_scope and interactive then
      out_scope = split_items(async.input({ prompt = "Out of scope (optional, ; separated): " }))
    end
    local acceptance = a.acceptance
      or split_items(async.input({ prompt = "Acceptance criteria (separate with ;): " }))
    local result = client_mod.call(ctx.client, "handoff.contract", with_scope(a, {
      objective = objective,
      inScope = in_scope,
      outOfScope = out_scope or {},
      acceptance = acceptance,
    }))
    remember(ctx).contract = result.source
    info(("Work Contract recorded as %s in %s."):format(result.source, result.scope))
    return result
  end,
}

S.work = {
  nargs = 0,
  desc = "record the work state ('text :: evidence' facts)",
  flags = { state = "value", disposition = "value", ["next"] = "list", scope = "value" },
  run = function(ctx, a)
    local mem = remember(ctx)
    local state
    if a.state then
      state = a.state -- "text :: cite, cite", parsed by the server
    else
      local text = async.input({ prompt = "Work state: " })
      local cites = async.input({
        prompt = "Evidence (workspace paths or source/<id>, comma separated): ",
        default = current_file(ctx) or "",
        completion = "file",
      })
      state = fact_line(text, cites)
    end
    local disposition = a.disposition
      or (a.state and "continuable") -- as on the command line
      or async.select(M.DISPOSITIONS, { prompt = "Disposition" })
    local next_actions = {}
    if a["next"] then
      for _, spec in ipairs(a["next"]) do
        next_actions[#next_actions + 1] = spec
      end
    else
      while true do
        local text = async.input({ prompt = "Next action (empty to finish): " })
        if not nonempty(text) then
          break
        end
        local cites = async.input({
          prompt = "Evidence for it: ",
          default = mem.contract or "",
          completion = "file",
        })
        next_actions[#next_actions + 1] = fact_line(text, cites)
      end
    end
    local result = client_mod.call(ctx.client, "handoff.recordWork", with_scope(a, {
      state = state,
      disposition = disposition,
      nextActions = next_actions,
    }))
    info(("Work state recorded as %s in %s."):format(result.source, result.scope))
    return result
  end,
}

S.prepare = {
  nargs = 1,
  desc = "prepare a handoff from the current draft buffer (or a draft JSON file); writes nothing",
  flags = { scope = "value" },
  run = function(ctx, a)
    local buf = vim.api.nvim_get_current_buf()
    local draft
    local entry = drafts.draft_of(buf)
    if a.positional[1] then
      draft = read_json(a.positional[1])
      draft = draft.draft or draft
    elseif entry and type(entry.draft) == "table" then
      draft = vim.deepcopy(entry.draft)
      draft.document = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
      if not a.scope and entry.scope then
        a.scope = entry.scope
      end
    else
      async.fail(
        "refused",
        "Nothing to prepare: run :Handoff generate for a draft (or give a draft JSON file)."
      )
    end
    local result = client_mod.call(ctx.client, "handoff.prepare", with_scope(a, { draft = draft }))
    local prepared = M.restore_prepared(result.prepared)
    remember(ctx).prepared = prepared
    show_prepared(ctx, prepared)
    info(("Prepared %s (not committed); :Handoff commit records it."):format(short(prepared.digest)))
    return result
  end,
}

S.current = {
  nargs = 0,
  desc = "hand off current work: boundary Source + prepared handoff",
  flags = { document = "value", scope = "value" },
  run = function(ctx, a)
    local params = with_scope(a, {})
    if a.document == "%" then
      params.document = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    elseif a.document then
      local file = io.open(vim.fn.expand(a.document), "r")
      if not file then
        async.fail("refused", ("Cannot read %s."):format(a.document))
      end
      params.document = file:read("*a")
      file:close()
    end
    local result = client_mod.call(ctx.client, "handoff.handoffCurrentWork", params)
    local prepared = M.restore_prepared(result.prepared)
    remember(ctx).prepared = prepared
    show_prepared(ctx, prepared)
    info(("Prepared %s (not committed), boundary %s; :Handoff commit records it."):format(
      short(prepared.digest),
      result.boundary
    ))
    return result
  end,
}

S.commit = {
  nargs = 1,
  desc = "commit the prepared handoff (or a prepared JSON file) as the next revision",
  flags = { scope = "value" },
  run = function(ctx, a)
    local prepared
    if a.positional[1] then
      prepared = read_json(a.positional[1])
      if prepared.prepared and not prepared.digest then
        prepared = prepared.prepared
      end
      M.restore_prepared(prepared)
    else
      prepared = remember(ctx).prepared
    end
    if not prepared then
      async.fail("refused", "Nothing prepared: run :Handoff current or :Handoff prepare first.")
    end
    local params = { prepared = prepared, scope = a.scope or prepared.scope }
    local result = client_mod.call(ctx.client, "handoff.commit", params)
    info(
      result.idempotent and ("Already committed as %s."):format(result.revision)
        or ("Committed %s."):format(result.revision)
    )
    return result
  end,
}

--- The target of continue/acknowledge: params for mode, revision/prepared.
local function target(ctx, a, modes, verb)
  local mem = remember(ctx)
  local mode = a.positional[1]
  local rest = 2
  if not mode then
    mode = async.select(modes, {
      prompt = verb .. " from",
      format_item = function(m)
        if m == "latest" then
          return "latest  (the scope's newest committed revision)"
        elseif m == "exact" then
          return "exact   (a committed revision you name)"
        end
        return "prepared  (the handoff prepared in this Neovim)"
      end,
    })
  end
  local params = { mode = mode }
  if mode == "exact" then
    local rev = a.positional[2]
    if rev and not vim.tbl_contains(M.ACK_STATUSES, rev) then
      rest = 3 -- the server checks the reference
    else
      rev = pick_revision(ctx, a, mem.continued and mem.continued.selected)
    end
    params.revision = rev
  elseif mode == "prepared" then
    local arg = a.positional[2]
    local prepared
    if arg and (arg:match("%.json$") or vim.fn.filereadable(vim.fn.expand(arg)) == 1) then
      prepared = read_json(arg)
      if prepared.prepared and not prepared.digest then
        prepared = prepared.prepared
      end
      M.restore_prepared(prepared)
      rest = 3
    else
      prepared = mem.prepared
    end
    if not prepared then
      async.fail("refused", "No prepared handoff here: run :Handoff current or :Handoff prepare first.")
    end
    params.prepared = prepared
    params.scope = prepared.scope
  end
  return with_scope(a, params), rest
end

S.continue = {
  nargs = function(a)
    local mode = a.positional[1]
    return (mode == "latest" or mode == nil) and 1 or 2
  end,
  desc = "continue from prepared, exact REV, or latest (untrusted history)",
  flags = { scope = "value" },
  run = function(ctx, a)
    local params, rest = target(ctx, a, M.MODES, "Continue")
    local extra = M.extra_words("continue", { nargs = rest - 1 }, a)
    if extra then
      async.fail("refused", extra)
    end
    local client = ctx.client
    -- The server writes the view (templates/continue.md.j2): the selection, the checks
    -- to make, then the handoff report of what was selected.
    params.render = "terminal"
    local result = client_mod.call(client, "handoff.continue", params)
    remember(ctx).continued = {
      mode = result.mode,
      selected = result.selected,
      scope = result.scope,
    }
    preview.show(result.markdown or "", {
      title = "continue",
      client_id = client.id,
      refresh = function(done)
        client_mod.exec(client, "handoff.continue", params, function(err, again)
          done(not err and again.markdown or nil)
        end, { quiet = true })
      end,
    })
    if result.found then
      info(("Continuing from %s (untrusted history: check it before acting)."):format(
        result.selected or "the prepared handoff"
      ))
    else
      info(("No committed revision in %s yet."):format(result.scope))
    end
    return result
  end,
}

local function ack_flags()
  local flags = { status = "value", note = "value", actor = "value", ["all-checks"] = "bool", scope = "value" }
  for _, check in ipairs(M.CHECKS) do
    flags[check[2]] = "bool"
  end
  return flags
end

S.ack = {
  nargs = 3,
  desc = "acknowledge an exact target: exact REV or prepared (never latest)",
  flags = ack_flags(),
  run = function(ctx, a)
    local params, rest = target(ctx, a, { "exact", "prepared" }, "Acknowledge")
    local status = a.status or a.positional[rest]
    local extra = M.extra_words("ack", { nargs = a.status and rest - 1 or rest }, a)
    if extra then
      async.fail("refused", extra)
    end
    if not status then
      status = async.select(M.ACK_STATUSES, { prompt = "Acknowledgement" })
    end
    local checks, any_flag = {}, a["all-checks"] == true
    for _, check in ipairs(M.CHECKS) do
      checks[check[1]] = a["all-checks"] == true or a[check[2]] == true
      any_flag = any_flag or a[check[2]] == true
    end
    if status == "accepted" and not any_flag and params.mode ~= "latest" then
      for _, check in ipairs(M.CHECKS) do
        checks[check[1]] = ask_yes(check[3])
      end
    end
    params.status = status
    params.checks = checks
    local note = a.note
    if not note and a.empty and status ~= "accepted" then
      note = async.input({ prompt = "Note (what needs clarifying, or why declined): " })
    end
    if nonempty(note) then
      params.note = note
    end
    if a.actor then
      params.actor = a.actor
    end
    local result = client_mod.call(ctx.client, "handoff.acknowledge", params)
    remember(ctx).receipt = { ref = result.receipt, scope = result.scope, status = result.status, target = result.target }
    info(("%s %s (receipt %s)."):format(result.status, result.target, result.receipt))
    return result
  end,
}

--- The scope's accepted acknowledgement receipts from the store, newest first:
--- { receipt, revision, seq, at, covered } (covered: an outcome already cites it).
function M.accepted_receipts(ctx, scope)
  local out = {}
  for _, rev in ipairs(revisions(ctx, scope)) do
    local cited = {}
    for _, o in ipairs(rev.coveredBy or {}) do
      if o.receipt then
        cited[o.receipt] = true
      end
    end
    for _, ack in ipairs(rev.acknowledgements or {}) do
      if ack.status == "accepted" then
        out[#out + 1] = {
          receipt = ack.receipt,
          revision = rev.revision,
          seq = ack.seq or 0,
          at = ack.at,
          covered = cited[ack.receipt] == true,
        }
      end
    end
  end
  table.sort(out, function(x, y)
    return x.seq > y.seq
  end)
  return out
end

local NO_RECEIPT = { receipt = false }

--- The receipt an outcome cites: --receipt, else the acknowledgement made in this
--- Neovim, else one of the scope's accepted receipts from the store (asked, newest
--- first; "none" is offered last). nil: none to cite.
local function outcome_receipt(ctx, a, params)
  if a.receipt then
    return a.receipt
  end
  if a["no-receipt"] then
    return nil
  end
  local mem = remember(ctx).receipt
  if mem and (not a.scope or a.scope == mem.scope) then
    params.scope = params.scope or mem.scope
    return mem.ref
  end
  local offered = M.accepted_receipts(ctx, a.scope)
  if #offered == 0 then
    return nil
  end
  offered[#offered + 1] = NO_RECEIPT
  local item = async.select(offered, {
    prompt = "Acknowledgement receipt to cite",
    format_item = function(r)
      if r == NO_RECEIPT then
        return "none  (the outcome covers no handoff)"
      end
      return ("%s  accepted %s%s%s"):format(
        r.receipt,
        r.revision,
        r.at and ("  " .. r.at) or "",
        r.covered and "  (already covered)" or ""
      )
    end,
  })
  return item.receipt or nil
end

--- The revision the outcome `source` covers, asked of the store (nil: none).
local function covered_revision(ctx, scope, source)
  for _, rev in ipairs(revisions(ctx, scope)) do
    for _, o in ipairs(rev.coveredBy or {}) do
      if o.outcome == source then
        return rev.revision
      end
    end
  end
  return nil
end

S.outcome = {
  desc = "record the Task Outcome (cites an accepted acknowledgement receipt)",
  flags = { check = "list", receipt = "value", ["no-receipt"] = "bool", scope = "value" },
  run = function(ctx, a)
    local status = a.positional[1] or async.select(M.OUTCOME_STATUSES, { prompt = "Task Outcome" })
    local summary
    if #a.positional > 1 then
      summary = table.concat(a.positional, " ", 2)
    else
      summary = async.input({ prompt = "Outcome summary: " })
    end
    local checks = {}
    for _, spec in ipairs(a.check or {}) do
      local name, check_status = spec:match("^(.*)=([^=]*)$")
      if not nonempty(name) then
        async.fail("refused", ("--check %q: write NAME=STATUS."):format(spec))
      end
      checks[#checks + 1] = { name = name, status = check_status }
    end
    local params = with_scope(a, { status = status, summary = summary, checks = checks })
    local receipt = outcome_receipt(ctx, a, params)
    params.receipt = receipt
    local result = client_mod.call(ctx.client, "handoff.recordOutcome", params)
    local covers = covered_revision(ctx, result.scope, result.source)
    if covers then
      info(("Outcome recorded: covers %s."):format(covers))
    elseif receipt then
      warn("Outcome recorded; it covers nothing (receipt not accepted).")
    else
      warn("Outcome recorded; it covers nothing (no receipt cited).")
    end
    result.covers = covers
    return result
  end,
}

S.report = {
  nargs = function(a)
    return (a.positional[1] == "handoff" or a.positional[1] == "source") and 2 or 1
  end,
  desc = "show continuity, history, one handoff or one record in the preview",
  flags = { revision = "value", scope = "value" },
  run = function(ctx, a)
    -- (source names its record, `:Handoff report source source/<id>`: never picked.)
    local kinds = vim.tbl_filter(function(k) return k ~= "source" end, M.REPORT_KINDS)
    local kind = a.positional[1] or async.select(kinds, { prompt = "Report" })
    local params = with_scope(a, { kind = kind })
    if kind == "source" then
      params.source = a.positional[2]
    elseif kind == "handoff" then
      local mem = remember(ctx)
      local rev = a.revision or a.positional[2]
      if rev then
        params.revision = rev
      elseif mem.prepared and not a.scope then
        params.prepared = mem.prepared
        params.scope = mem.prepared.scope
      else
        params.revision = pick_revision(ctx, a, mem.continued and mem.continued.selected)
      end
    elseif a.revision then
      params.revision = a.revision
    end
    show_view(ctx, kind, "handoff.report", params, report_markdown)
  end,
}

-- :Handoff log, restart and cancel: the plugin's upkeep (handoff/maintenance.lua).
for name, spec in pairs(require("handoff.maintenance")) do
  S[name] = spec
end

return M
