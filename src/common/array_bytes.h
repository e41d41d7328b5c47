/*
 * array_bytes.h — the bytes a CUDA array's elements take, from its
 * CUDA_ARRAY3D_DESCRIPTOR: what the engine charges for an array and what
 * the simulator takes from its device for one (header only, so both the
 * engine and the simulator use it without linking anything more).
 */
#ifndef LMS_ARRAY_BYTES_H
#define LMS_ARRAY_BYTES_H

#include <cuda.h>
#include <stdint.h>

/* Bytes of one channel of `f` (CUarray_format's documentation: the 8-bit
 * integer formats 1, the 16-bit ones and HALF 2, the 32-bit ones and FLOAT
 * 4), or 0 for the formats not sized here (block-compressed, planar video,
 * the packed normalized ones). */
static inline uint64_t lms_array_format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

/* Width x Height x Depth elements of NumChannels channels each. Following
 * cuArray3DCreate's documentation, a 1D array has Height and Depth 0 and a
 * 2D array Depth 0 (a 0 counts as 1 here); a layered array's Depth is its
 * layers, a cubemap's its faces (6, or 6 per layer). Padding the device may
 * add is not counted. Answers 0 for a format lms_array_format_bytes does
 * not size and when the product overflows 64 bits; flags are not looked at
 * (sparse and deferred-mapping arrays are the caller's to tell apart). */
static inline uint64_t lms_array_desc_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    uint64_t n = d->Width, h = d->Height ? d->Height : 1, z = d->Depth ? d->Depth : 1;
    uint64_t per = lms_array_format_bytes(d->Format) * d->NumChannels;
    if (__builtin_mul_overflow(n, h, &n) || __builtin_mul_overflow(n, z, &n) ||
        __builtin_mul_overflow(n, per, &n))
        return 0;
    return n;
}

#endif
