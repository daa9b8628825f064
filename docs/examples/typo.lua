local orion = require 'orion'
orion.text_file("docs/examples/tiny.txt", {fromat="coo"})
