#pragma once

// SparseGPT's column-by-column loop over one block, as a hand-written loop
// over contiguous rows. Within a block every row is independent once its mask
// is known (the unstructured mask is chosen for the whole block before the
// loop; an N:M mask per row as the loop reaches each group), so the loop runs
// row by row, and rows can go to different threads:
//
//   for each row r, for each column i of the block:
//     err[r,i] = w[r,i] x pruned[r,i] / H_inv[i,i]
//     w[r,j]  -= err[r,i] x H_inv[i,j]            for every later column j
//
// Each update is rounded as a product, then a difference, never fused into one
// multiply-add: that is how libtorch's addr_ rounds it when H_inv's rows are
// strided (LAPACK leaves the factor column-major), so the pruned weights are
// bit for bit those of the reference's formulation in libtorch calls, which
// the IGSP study's results were made with (tested).
//
// Plain C++ on raw arrays (no libtorch): prune.cpp hands it the tensors' data.

#include <cstdint>

namespace clustertwin::real::igsp {

/// One block of the loop. The pointers and strides are in elements.
template <typename T>
struct SparseGptBlockRows {
  // The block's [count, count] part of H_inv's upper factor: row i at h_inv + i x h_inv_stride.
  const T* h_inv = nullptr;
  int64_t h_inv_stride = 0;
  int64_t count = 0;  // the block's columns
  // Row r's block at weight + r x weight_stride; its pruned entries come back exactly 0.
  T* weight = nullptr;
  int64_t weight_stride = 0;
  // As weight; read, or written group by group when m > 0.
  bool* pruned = nullptr;
  int64_t pruned_stride = 0;
  // As weight: err[r,i] above, for the lazy update of the later blocks.
  T* err = nullptr;
  int64_t err_stride = 0;
  // m > 0: the loop chooses each row's mask, the n lowest w^2 / H_inv[i,i]^2 of
  // every m consecutive columns (ties: the lower column), as it reaches them.
  int n = 0, m = 0;
};

/// Runs the loop over rows [row_begin, row_end). Calls on disjoint row ranges
/// may run at once.
template <typename T>
void sparsegpt_block_rows(const SparseGptBlockRows<T>& block, int64_t row_begin, int64_t row_end);

extern template void sparsegpt_block_rows<float>(const SparseGptBlockRows<float>&, int64_t, int64_t);
extern template void sparsegpt_block_rows<double>(const SparseGptBlockRows<double>&, int64_t, int64_t);

}  // namespace clustertwin::real::igsp
