-- Outside a workspace root: :Handoff asks before the server may keep state in the
-- current directory ("no" writes nothing). :checkhealth handoff runs the server's
-- --version at most once (cached), and asks a running server instead.

local H = dofile(os.getenv("HANDOFF_HARNESS"))
local WRAPPER = assert(os.getenv("HANDOFF_WRAPPER"))

local function health()
  vim.cmd("checkhealth handoff")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd("bwipeout")
  return text
end

H.main(function()
  local R = H.record
  vim.lsp.config("handoff", { cmd = { WRAPPER } })
  R("health_first", health())
  R("health_cached", health())

  H.answer("no")
  R("refused", H.handoff("report continuity"))
  R("state_after_no", vim.uv.fs_stat(".handoff") ~= nil)
  R("clients_after_no", #vim.lsp.get_clients({ name = "handoff" }))

  H.answer("yes")
  R("contract", H.handoff("contract --objective 'o' --in-scope client --acceptance 't'"))
  R("state_after_yes", vim.uv.fs_stat(".handoff") ~= nil)
  R("report", H.handoff("report continuity")) -- not asked again
  R("health_running", health())
end)
