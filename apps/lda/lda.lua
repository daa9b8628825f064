-- apps/lda/lda.lua: being written
error("apps/lda/lda.lua is not written yet", 0)
