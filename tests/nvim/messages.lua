-- Messages that stay: a confirmation is still in the message area (read as a UI reads
-- it, through vim.ui_attach) after a preview was shown, refreshed, closed, and the state
-- changed under the closed preview. Progress is echoed (progress_echo on).

local H = dofile(os.getenv("HANDOFF_HARNESS"))

H.async(function()
  local R = H.record
  local preview = require("handoff.preview")
  vim.g.handoff_ui = {} -- progress_echo defaults to true
  H.track_messages()

  -- UI events reach the attached UI when the screen is flushed.
  local function settle()
    H.sleep(600)
    vim.cmd("redraw")
  end

  -- A visible preview, refreshed (quietly) by the change that a confirmation reports.
  H.run("contract --objective 'complete the OpenAPI client update' --in-scope client --acceptance 'tests pass'")
  R("first_events", vim.deepcopy(H.area_events)) -- the server starting, the contract
  H.run("report continuity")
  settle()
  R("report_area", H.area)
  local renders = H.preview_count()
  R("work", H.run("work --state 'client generation completed :: client/pets_client.py' --next 'run tests :: openapi.yaml'"))
  local confirmation = H.notes[#H.notes].msg
  H.until_(function()
    return H.preview_count() > renders
  end, nil, "the visible preview to refresh")
  settle()
  R("events", vim.deepcopy(H.area_events)) -- shown when an assertion fails
  R("visible", { note = confirmation, area = H.area, refreshed = (H.preview() or ""):find("run tests", 1, true) ~= nil })

  -- The preview closed with `q`; a change comes: no re-render, the confirmation stays.
  vim.api.nvim_set_current_win(preview.window())
  vim.api.nvim_feedkeys("q", "t", false)
  H.until_(function()
    return preview.window() == nil
  end, nil, "q to close the preview")
  renders = H.preview_count()
  R("contract", H.run("contract --objective 'second contract' --in-scope docs --acceptance 'docs build'"))
  confirmation = H.notes[#H.notes].msg
  settle()
  R("events2", vim.deepcopy(H.area_events))
  R("hidden", {
    note = confirmation,
    area = H.area,
    closed = preview.window() == nil,
    renders = H.preview_count() - renders,
    stale = preview.stale,
  })

  -- Shown again, the stale preview re-renders.
  vim.cmd("botright split")
  vim.cmd("buffer handoff://preview")
  H.until_(function()
    return H.preview_count() > renders
  end, nil, "the stale preview to re-render when shown")
  R("reshown", { stale = preview.stale, text = H.preview() })
  vim.cmd("close")

  -- Prepared and committed: the revision stays in the message area.
  H.run("current")
  R("commit", H.run("commit"))
  confirmation = H.notes[#H.notes].msg
  settle()
  R("committed", { note = confirmation, area = H.area })
  R("echospace", vim.v.echospace)
  R("statusmsg", vim.v.statusmsg)
end)
