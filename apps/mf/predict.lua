-- apps/mf/predict.lua: being written
error("apps/mf/predict.lua is not written yet", 0)
