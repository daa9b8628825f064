-- apps/dnn/dnn.lua: being written
error("apps/dnn/dnn.lua is not written yet", 0)
