/*
 * array_bytes.h — the bytes a CUDA array's elements take, from its
 * CUDA_ARRAY3D_DESCRIPTOR, and those of a mipmapped array's levels: what
 * the engine charges for an array and what the simulator takes from its
 * device for one; and which descriptors the driver refuses (header only, so both the engine and the simulator use it
 * without linking anything more).
 */
#ifndef LMS_ARRAY_BYTES_H
#define LMS_ARRAY_BYTES_H

#include <cuda.h>
#include <stdbool.h>
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

/* Whether cuArray3DCreate and cuMipmappedArrayCreate accept the shape of
 * `d` (otherwise CUDA_ERROR_INVALID_VALUE), as their documentation
 * describes it: only the CUDA_ARRAY3D_* flags it names; 1, 2 or 4
 * channels; a Width; a cubemap square with 6 faces (6 per layer when
 * layered); a layered array with a Depth (its layers); a 1D array (Height
 * 0, not layered) without Depth. Formats are not looked at. */
static inline bool lms_array_desc_valid(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    const unsigned known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
                           CUDA_ARRAY3D_TEXTURE_GATHER | CUDA_ARRAY3D_DEPTH_TEXTURE |
                           CUDA_ARRAY3D_COLOR_ATTACHMENT | CUDA_ARRAY3D_SPARSE |
                           CUDA_ARRAY3D_DEFERRED_MAPPING | CUDA_ARRAY3D_VIDEO_ENCODE_DECODE;
    if ((d->Flags & ~known) || d->Width == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return false;
    bool layered = d->Flags & CUDA_ARRAY3D_LAYERED, cube = d->Flags & CUDA_ARRAY3D_CUBEMAP;
    if (cube && (d->Width != d->Height || d->Depth == 0 || d->Depth % 6 != 0 || (!layered && d->Depth != 6)))
        return false;
    if (layered && d->Depth == 0)
        return false;
    return layered || d->Height != 0 || d->Depth == 0;   /* 1D arrays have neither */
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

/* The levels a mipmapped array of `d` gets when `asked` are asked for:
 * clamped to [1, 1 + floor(log2(max(Width, Height, Depth)))], as
 * cuMipmappedArrayCreate documents (Depth included even when it counts
 * layers or cube faces, as the documentation writes it). */
static inline unsigned lms_mipmap_levels(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned asked)
{
    uint64_t m = d->Width;
    m = d->Height > m ? d->Height : m;
    m = d->Depth > m ? d->Depth : m;
    unsigned most = 1;
    while (m >>= 1)
        most++;
    return asked < 1 ? 1 : asked > most ? most : asked;
}

/* The descriptor of level `l` of a mipmapped array of `d`: each extent
 * halved l times, never below 1 (a 0 height stays 0: a 1D array's); the
 * depth halves only for a 3D array (layers and cube faces stay). */
static inline CUDA_ARRAY3D_DESCRIPTOR lms_mipmap_level(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned l)
{
    CUDA_ARRAY3D_DESCRIPTOR v = *d;
    bool plain3d = !(d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP));
    v.Width = l < 64 && (d->Width >> l) ? d->Width >> l : 1;
    if (d->Height)
        v.Height = l < 64 && (d->Height >> l) ? d->Height >> l : 1;
    if (d->Depth && plain3d)
        v.Depth = l < 64 && (d->Depth >> l) ? d->Depth >> l : 1;
    return v;
}

/* Bytes of the elements of every level of a mipmapped array of `d` with
 * `levels` levels (as lms_mipmap_levels clamps them), or 0 as
 * lms_array_desc_bytes answers (a format not sized, an overflow). */
static inline uint64_t lms_mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    uint64_t sum = 0;
    unsigned n = lms_mipmap_levels(d, levels);
    for (unsigned l = 0; l < n; l++) {
        CUDA_ARRAY3D_DESCRIPTOR v = lms_mipmap_level(d, l);
        uint64_t b = lms_array_desc_bytes(&v);
        if (b == 0 || __builtin_add_overflow(sum, b, &sum))
            return 0;
    }
    return sum;
}

#endif
