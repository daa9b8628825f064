local orion = require "orion"
print(orion.text_file("bad.txt", { on_error = "skip" }))
