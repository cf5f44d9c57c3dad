/** @file amr.h
 *  @brief Adaptive mesh refinement test problems. (The octree itself comes
 *  with the AMR work; this header starts with the test problems.) */
#ifndef STRATA_AMR_H
#define STRATA_AMR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Parameters of the cosmology-like density field. */
typedef struct strata_cosmology_params {
  uint64_t seed;         /**< random seed: the same seed gives the same field, bit for bit */
  double spectral_index; /**< power spectrum P(k) ~ k^index (default -2: large-scale power) */
  double sigma;          /**< standard deviation of the log density (default 1) */
  double cutoff;         /**< Gaussian cutoff of the spectrum, in cells (default 1) */
} strata_cosmology_params;

/** @brief Fill @p p with the defaults (seed 1). */
void strata_cosmology_params_init(strata_cosmology_params *p);

/** @brief A log-normal overdensity field on a periodic n^3 grid, in units
 *  of the mean density: a Gaussian random field with a power-law spectrum
 *  (white noise shaped in Fourier space with FFTW), scaled to the requested
 *  standard deviation and exponentiated, rho = exp(delta - sigma^2 / 2),
 *  then rescaled to a mean of exactly 1. Peaks cluster where the
 *  large-scale modes are high, like halos. Deterministic: the noise of cell
 *  (x, y, z) depends only on the seed and the cell.
 *  @param n cells per axis (2 to 1024).  @param p parameters (NULL: defaults).
 *  @param rho n^3 values, x fastest.
 *  @return 0; STRATA_EINVAL; STRATA_ENOMEM. Needs no strata_init(). */
int strata_cosmology_density(int64_t n, const strata_cosmology_params *p, double *rho);

#ifdef __cplusplus
}
#endif
#endif
