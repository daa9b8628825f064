# bench/lr_synth.sh: the synthetic logistic-regression set of bench/lr.sh
# and bench/scale.sh; sourced, not run.
#
# lr_synth OUT N SEED FEATURES NNZ: N libsvm rows over FEATURES features,
# NNZ to 3 * NNZ features a row (half from the first 1%, half from all;
# sorted), values 1/sqrt(nnz), the label (1/0) the sign of a fixed hidden
# weight vector's score with 5% of them flipped; SEED seeds awk's rand.
lr_synth() {
  awk -v n="$2" -v nf="$4" -v nnz="$5" -v seed="$3" 'BEGIN {
    srand(seed)
    for (i = 0; i < n; i++) {
      k = nnz + int(rand() * (2 * nnz + 1)); delete seen; line = ""; z = 0
      v = 1 / sqrt(k)
      for (j = 0; j < k; j++) {
        # half the features from the first 1% (frequent ones), half from all
        f = (rand() < 0.5) ? 1 + int(rand() * (nf / 100)) : 1 + int(rand() * nf)
        if (f in seen) continue
        seen[f] = 1; key[++m] = f
      }
      # sorted keys, as liblinear wants them (insertion sort: k is small)
      nk = m
      for (j = 2; j <= nk; j++) {
        t = key[j]
        for (q = j - 1; q >= 1 && key[q] > t; q--) key[q + 1] = key[q]
        key[q + 1] = t
      }
      for (j = 1; j <= nk; j++) {
        f = key[j]
        h = (f * 2654435761) % 4294967296
        z += ((h % 2001) - 1000) / 1000 * v
        line = line " " f ":" sprintf("%.6f", v)
      }
      delete key; m = 0
      y = z > 0 ? 1 : 0
      if (rand() < 0.05) y = 1 - y
      print y line
    }
  }' > "$1"
}
