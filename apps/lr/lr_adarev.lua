-- AdaRevision (McMahan and Streeter, "Delay-Tolerant Algorithms for
-- Asynchronous Distributed Online Learning", NIPS 2014) for one weight:
-- the step lr.lua's buffer applies (its apply function, on the owner of
-- the weight, with the weight's state in helper arrays) and that the
-- two-loop version in t/cluster/lr_adarev_two.lua applies in a second
-- loop, so that both compute the same bits.
--
-- A weight's state: gsum, the sum of the gradients applied to it so far;
-- z, the accumulated squared gradients revised for delay, and zmax, the
-- largest z so far (each starts at DELTA); gold, the gsum the gradients
-- being applied were computed against, and stamp, the epoch gold was
-- taken in.  A gradient g computed by a loop read the weights as of the
-- loop's start, so the gradients applied to the weight since then (gbck =
-- gsum - gold) are the ones it did not see: AdaRevision grows z by
-- g^2 + 2 g gbck and revises the earlier steps for the smaller rate.

local M = {}

M.DELTA = 1.0

function M.step(alpha, epoch, w, g, gsum, z, zmax, gold, stamp)
  if stamp ~= epoch then gold, stamp = gsum, epoch end
  local gbck = gsum - gold
  local eta_old = alpha / math.sqrt(zmax)
  z = z + g * g + 2 * g * gbck
  if z > zmax then zmax = z end
  local eta = alpha / math.sqrt(zmax)
  return w - eta * g + (eta_old - eta) * gbck, gsum + g, z, zmax, gold, stamp
end

return M
