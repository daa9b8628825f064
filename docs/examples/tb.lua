local function f() error("bad thing") end
f()
