// A checkpoint's values must be finite. A NaN or inf weight loaded silently surfaces steps later
// as a diverged loss with no hint of its origin (and a NaN compares unequal to itself, so every
// check that fingerprints weights misreads it); named at load, it is bad input with its tensor
// and element.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace shardbench::checkpoint {

// Throws InputError when `loaded` (what a load wrote into the model) holds a non-finite value:
// "WHERE: tensor 'NAME' holds nan at element [3, 5] ...". `loaded` covers the elements
// [flat_begin, flat_begin + numel) of the row-major flattening of a tensor of `shape` (a rank's
// slice); `stored` (same numel, or undefined) is what the file held there, so a finite value
// that overflowed in the model's dtype is told apart from one stored non-finite. Integer and
// bool tensors are left alone.
void RequireFiniteLoaded(const at::Tensor& loaded, const at::Tensor& stored, const std::string& where,
                         const std::string& name, const std::vector<int64_t>& shape, int64_t flat_begin = 0);

}  // namespace shardbench::checkpoint
