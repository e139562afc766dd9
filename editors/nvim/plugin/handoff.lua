-- handoff.nvim: defines :Handoff and the progress tracking; everything else loads on use.

if vim.g.loaded_handoff then
  return
end
vim.g.loaded_handoff = true

if vim.fn.has("nvim-0.11") == 0 then
  vim.api.nvim_echo({ { "handoff.nvim needs Neovim 0.11 or newer", "WarningMsg" } }, true, {})
  return
end

-- :help handoff with any install: doc/tags ships with the plugin; should it be missing
-- (a copy without it), generate it once where the folder is writable.
do
  local source = debug.getinfo(1, "S").source:gsub("^@", "")
  local doc = vim.fs.joinpath(vim.fs.dirname(vim.fs.dirname(vim.fn.fnamemodify(source, ":p"))), "doc")
  if vim.fn.filereadable(doc .. "/tags") == 0 and vim.fn.filewritable(doc) == 2 then
    pcall(vim.cmd.helptags, vim.fn.fnameescape(doc))
  end
end

vim.api.nvim_create_user_command("Handoff", function(opts)
  require("handoff").run(opts.args)
end, {
  nargs = "*",
  desc = "Handoff: generate, start, contract, work, current, commit, continue, ack, outcome, report, cancel…",
  complete = function(arglead, cmdline, cursorpos)
    return require("handoff").complete(arglead, cmdline, cursorpos)
  end,
})

local group = vim.api.nvim_create_augroup("handoff", { clear = true })

-- Handoff documents: a running server checks their claims (diagnostics, hover, gd,
-- code actions, lenses). Which Markdown files are handoffs: the client's checkDocuments.
for _, name in ipairs({ "handoffUi.startSessionFromDraft", "handoffUi.prepareFromDraft", "handoffUi.showChecks" }) do
  vim.lsp.commands[name] = function(command)
    require("handoff.client").lens_command(command)
  end
end
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  group = group,
  pattern = { "*.md" },
  desc = "Attach the running handoff server to a handoff document",
  callback = function(ev)
    require("handoff.client").attach_document(ev.buf)
  end,
})

local begun = {} -- "client:token" -> { title, cancellable } of a running progress
vim.api.nvim_create_autocmd("LspProgress", {
  group = group,
  desc = "Track cancellable handoff progress and echo it",
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if not client or client.name ~= "handoff" then
      return
    end
    require("handoff.client").on_progress(ev)
    local ui = vim.g.handoff_ui or {}
    if ui.progress_echo == false then
      return
    end
    local token = ev.data.params.token
    local value = (ev.data.params or {}).value or {}
    if require("handoff.client").is_quiet(token, value.kind) then
      return -- a preview refreshing in the background
    end
    -- The title and whether it can be cancelled come with "begin" only: kept per token.
    local key = tostring(ev.data.client_id) .. ":" .. tostring(token)
    if value.kind == "begin" then
      begun[key] = { title = value.title, cancellable = value.cancellable }
    end
    local first = begun[key] or {}
    if value.kind == "end" then
      -- Nothing on end: an empty echo would wipe the confirmation that follows.
      begun[key] = nil
      return
    end
    if value.cancellable ~= nil then
      first.cancellable = value.cancellable
    end
    local title = value.title or first.title or "handoff"
    local message = value.message
    if message and (message == title or vim.startswith(message, title)) then
      title, message = message, nil -- said once
    end
    local text = ("%s%s%s"):format(
      title,
      message and (": " .. message) or "",
      first.cancellable and "  (:Handoff cancel)" or ""
    )
    vim.api.nvim_echo({ { require("handoff.msg").one_line(text) } }, false, {})
  end,
})
