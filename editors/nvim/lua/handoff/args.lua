-- :Handoff argument parsing: shell-like words ("double", 'single' quotes, backslash
-- escapes) and --flags described per subcommand.

local M = {}

--- Splits a command line into words; returns the words and whether the last word is
--- still open (for completion).
---@param line string
---@return string[] words, boolean trailing_space
function M.split(line)
  local words, word, quote, escaped, in_word = {}, {}, nil, false, false
  for ch in line:gmatch(".") do
    if escaped then
      word[#word + 1], escaped, in_word = ch, false, true
    elseif ch == "\\" and quote ~= "'" then
      escaped, in_word = true, true
    elseif quote then
      if ch == quote then
        quote = nil
      else
        word[#word + 1] = ch
      end
    elseif ch == '"' or ch == "'" then
      quote, in_word = ch, true
    elseif ch:match("%s") then
      if in_word then
        words[#words + 1] = table.concat(word)
        word, in_word = {}, false
      end
    else
      word[#word + 1], in_word = ch, true
    end
  end
  local trailing = not in_word
  if in_word then
    words[#words + 1] = table.concat(word)
  end
  return words, trailing
end

--- Parses words against `flags` ({ name = "value" | "list" | "bool" }).
--- Returns { positional = {...}, <flag> = value } or nil and an error message.
---@param words string[]
---@param flags table<string, string>
function M.parse(words, flags)
  local out = { positional = {} }
  local i = 1
  while i <= #words do
    local word = words[i]
    local name, inline = word:match("^%-%-([%w%-]+)=(.*)$")
    name = name or word:match("^%-%-([%w%-]+)$")
    if name and word ~= "--" then
      local kind = flags[name]
      if not kind then
        return nil, ("unknown option --%s"):format(name)
      end
      local value
      if kind == "bool" then
        if inline then
          return nil, ("--%s takes no value"):format(name)
        end
        value = true
      else
        value = inline
        if value == nil then
          i = i + 1
          value = words[i]
          if value == nil then
            return nil, ("--%s needs a value"):format(name)
          end
        end
      end
      if kind == "list" then
        out[name] = out[name] or {}
        table.insert(out[name], value)
      else
        out[name] = value
      end
    elseif word == "--" then
      vim.list_extend(out.positional, words, i + 1)
      break
    else
      table.insert(out.positional, word)
    end
    i = i + 1
  end
  return out
end

return M
