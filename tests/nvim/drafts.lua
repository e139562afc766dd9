-- :Handoff sessions and :Handoff generate (extractive): the session picked through
-- vim.ui.select, the focus typed, the draft opened in a normal buffer, edited, prepared
-- and committed.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local SESSION = assert(os.getenv("HANDOFF_SESSION"))

H.main(function()
  local R = H.record

  R("sessions", H.handoff("sessions"))
  R("preview_sessions", H.preview())
  R("complete_sessions", vim.fn.getcompletion("Handoff generate --session ", "cmdline"))

  H.answer(function(item)
    return item.path == SESSION
  end, "keep the client API stable")
  local generated = H.handoff("generate")
  R("generate", generated)

  local buf = vim.api.nvim_get_current_buf()
  R("draft", {
    text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"),
    buftype = vim.bo[buf].buftype,
    filetype = vim.bo[buf].filetype,
    modifiable = vim.bo[buf].modifiable,
    modified = vim.bo[buf].modified,
    is_preview = buf == require("handoff.preview").bufnr(),
  })

  -- Edit the draft like any buffer, then prepare from it: the edit is the document.
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "", "Edited in Neovim before the handoff." })
  R("prepare", H.handoff("prepare"))
  R("preview_prepared", H.preview())
  R("commit", H.handoff("commit"))
  R("continue", H.handoff("continue latest"))
end)
