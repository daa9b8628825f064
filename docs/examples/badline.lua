local orion = require "orion"
orion.text_file("bad.txt")
