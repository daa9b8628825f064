local cli = require "orion.cli"
local spec = {
  name = "cli.lua", summary = "Demonstrates orion.cli.",
  options = {
    { "input", "FILE", nil, "a file to read" },
    { "batch-size", "N", 64, "examples per step" },
    { "rate", "X", 0.5, "a number" },
    { "verbose", false, false, "print more" },
  },
}
local opts = cli.parse(arg, spec)
print(opts.input, opts.batch_size, opts.rate, opts.verbose)
