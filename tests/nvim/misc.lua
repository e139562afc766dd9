-- Health, settings through vim.g.handoff, refusals of bad input, dismissed prompts.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.main(function()
  local R = H.record

  -- Subcommands issued back to back, before the server is even up, run in order:
  -- commit commits what current prepared.
  -- No root marker: asked once before anything can be written in the current directory.
  H.answer("yes")
  local waits = {}
  for _, line in ipairs({
    "contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'",
    "work --state 'client generation completed :: client/pets_client.py' --next 'run tests :: openapi.yaml'",
    "current",
    "commit",
  }) do
    waits[#waits + 1] = H.start(line)
  end
  local ordered = {}
  for i, wait in ipairs(waits) do
    ordered[i] = wait()
  end
  R("back_to_back", ordered)

  -- Bad command lines never reach the server.
  local n = #H.notes
  vim.cmd("Handoff frobnicate")
  vim.cmd("Handoff report --bogus")
  R("usage_notes", vim.list_slice(H.notes, n + 1))

  -- Words a subcommand does not take are refused, never ignored ("|" does not chain).
  local revision = ordered[4].result.revision
  n = #H.notes
  local extra = {}
  for _, line in ipairs({
    "current | Handoff commit",
    "sessions now",
    "continue latest please",
    "ack exact " .. revision .. " accepted twice --all-checks",
    "report continuity " .. revision,
  }) do
    extra[#extra + 1] = H.handoff(line)
  end
  R("extra_words", extra)
  R("extra_notes", vim.list_slice(H.notes, n + 1))
  R("complete_ack_modes", vim.fn.getcompletion("Handoff ack ", "cmdline"))

  -- A dismissed prompt ends the subcommand quietly.
  n = #H.notes
  H.answer(vim.NIL)
  R("dismissed", H.handoff("contract"))
  R("dismissed_notes", vim.list_slice(H.notes, n + 1))

  -- A server refusal of malformed input (invalid status) is shown with its message.
  R("bad_outcome", H.handoff("outcome finished 'it went well'"))

  -- A missing model setting is named the Neovim way (no CLI flag :Handoff lacks).
  n = #H.notes
  R("no_model", H.handoff("generate --session /nowhere/s.jsonl --provider openai"))
  R("no_model_notes", vim.list_slice(H.notes, n + 1))

  -- No sessions: the refusal says where it looked.
  n = #H.notes
  R("no_sessions", H.handoff("generate"))
  R("no_sessions_notes", vim.list_slice(H.notes, n + 1))

  -- The client was started on demand for the current directory.
  local client = vim.lsp.get_clients({ name = "handoff" })[1]
  R("root_dir", client.root_dir)

  -- The configured scope comes from vim.g.handoff; changing it reaches the server
  -- at the next :Handoff (didChangeConfiguration).
  R("report_first", H.handoff("report continuity"))
  R("preview_first", H.preview())
  vim.g.handoff = { scope = "from-vim-g" }
  R("report_second", H.handoff("report continuity"))
  R("preview_second", H.preview())
  R("settings_sent", client.settings.handoff)

  -- The work state, prompted: text, evidence, disposition, next actions until empty.
  local n_prompts = #H.prompts
  H.answer(
    "client generation completed",
    "client/pets_client.py",
    "blocked",
    "run contract tests",
    "client/pets_client.py, openapi.yaml",
    ""
  )
  R("work", H.handoff("work"))
  R("work_prompts", vim.list_slice(H.prompts, n_prompts + 1))

  -- :Handoff alone picks the subcommand, then its arguments.
  H.answer("report", "history")
  R("picked", H.handoff(""))
  R("preview_picked", H.preview())

  -- :checkhealth handoff.
  vim.cmd("checkhealth handoff")
  R("health", table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"))

  -- A state file moved aside as damaged (as the store does): not "OK" any more.
  local folder = vim.fn.getcwd() .. "/.handoff"
  assert(vim.uv.fs_rename(folder .. "/state.json", folder .. "/state.json.corrupt-20261205T120000-abcdef"))
  vim.cmd("checkhealth handoff")
  R("health_corrupt", table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"))
  assert(vim.uv.fs_rename(folder .. "/state.json.corrupt-20261205T120000-abcdef", folder .. "/state.json"))
end)
