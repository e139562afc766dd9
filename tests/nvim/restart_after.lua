-- After a restart (a new Neovim, a new server): the saved draft file is still a draft
-- (:Handoff prepare takes its saved text), and :Handoff outcome offers the scope's
-- accepted receipts from the store; without one it says the outcome covers nothing.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local DRAFT = assert(os.getenv("HANDOFF_DRAFT"))
local RECEIPT = assert(os.getenv("HANDOFF_RECEIPT"))

H.main(function()
  local R = H.record
  vim.cmd("edit " .. vim.fn.fnameescape(DRAFT))
  R("prepare", H.handoff("prepare"))
  R("preview_prepared", H.preview())
  vim.g.handoff_ui = { progress_echo = false, start = { open = "none" } }
  R("start", H.handoff("start claude"))

  local n = #H.notes
  R("outcome_none", H.handoff("outcome partial half done --no-receipt"))
  R("outcome_none_notes", vim.list_slice(H.notes, n + 1))

  n = #H.notes
  R("outcome_unclear", H.handoff("outcome blocked waiting --receipt " .. os.getenv("HANDOFF_UNCLEAR")))
  R("outcome_unclear_notes", vim.list_slice(H.notes, n + 1))

  local menus = #H.menus
  H.answer(function(item)
    return item.receipt == RECEIPT
  end)
  n = #H.notes
  R("outcome", H.handoff("outcome succeeded contract tests pass"))
  R("outcome_notes", vim.list_slice(H.notes, n + 1))
  R("menus", vim.list_slice(H.menus, menus + 1))
end)
