-- True previews: the prepared handoff's "Evidence now" flips to changed after :w of a
-- cited file (BufWritePost), back after `R` once the file is restored outside Neovim;
-- writing an uncited file does not re-render; `g?` lists the keys.

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.main(function()
  local R = H.record
  local preview = require("handoff.preview")
  local contract = H.handoff("contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'")
  H.handoff(
    "work --state 'client generation completed :: client/pets_client.py' --next 'run tests :: "
      .. contract.result.source
      .. "'"
  )
  R("current", H.handoff("current"))
  R("before", H.preview())
  local original = vim.fn.readfile("client/pets_client.py")

  -- :w of the cited file in the window you work in: the preview re-checks.
  vim.cmd("edit client/pets_client.py")
  vim.api.nvim_buf_set_lines(0, -1, -1, false, { "# edited" })
  local renders = H.preview_count()
  vim.cmd("write")
  H.wait(function()
    return H.preview_count() > renders
  end, nil, "the preview to re-check after :w")
  R("after_write", H.preview())

  -- An uncited file written: no re-render.
  renders = H.preview_count()
  vim.cmd("edit notes.md")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "notes" })
  vim.cmd("write")
  vim.wait(300, function()
    return false
  end)
  R("uncited_renders", H.preview_count() - renders)

  -- Restored behind Neovim's back; `R` in the preview re-checks.
  vim.fn.writefile(original, "client/pets_client.py")
  vim.api.nvim_set_current_win(preview.window())
  renders = H.preview_count()
  vim.api.nvim_feedkeys("R", "x", false)
  H.wait(function()
    return H.preview_count() > renders
  end, nil, "R to re-render")
  R("after_R", H.preview())

  local n = #H.notes
  vim.api.nvim_feedkeys("g?", "x", false)
  R("keys", vim.list_slice(H.notes, n + 1))

  -- Record text with markdown emphasis characters is shown whole: nothing concealed.
  H.handoff("contract --objective 'rename _list_pets_ and keep *args* as is' --in-scope client --acceptance 'tests pass'")
  H.handoff("report continuity")
  local win = preview.window()
  local shown
  for _, line in ipairs(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)) do
    if line:find("rename _list_pets_", 1, true) then
      shown = line
    end
  end
  R("emphasis", { line = shown, conceallevel = vim.wo[win].conceallevel })
end)
