/*
 * trace_fields.h — the readers' side of common/trace_schema.def: every
 * line type and field a reader looks up is named through these macros,
 * which fail to compile when the schema has no such line or field, or
 * gives the field another type than the reader reads it as.
 *
 *   LMS_TE(alloc)            "alloc", checked to be a line type
 *   LMS_TF(alloc, size, U64) "size", checked to be a U64 field of alloc
 */
#ifndef LMS_TRACE_FIELDS_H
#define LMS_TRACE_FIELDS_H

enum lms_trace_type {
    LMS_TT_U64, LMS_TT_I64, LMS_TT_HEX, LMS_TT_STR, LMS_TT_BOOL, LMS_TT_TIME, LMS_TT_IDS,
    LMS_TT_FRAMES, LMS_TT_PYFRAMES, LMS_TT_DROPPED, LMS_TT_OPTIONS, LMS_TT_PLACES,
};

/* LMS_TE_<line>, LMS_TR_<record>, and LMS_TF_<owner>__<field> = its type. */
enum lms_trace_schema {
#define LMS_EVENT(ev) LMS_TE_##ev,
#define LMS_RECORD(rec) LMS_TR_##rec,
#define LMS_FIELD(owner, name, type, doc) LMS_TF_##owner##__##name = LMS_TT_##type,
#define LMS_END(owner)
#include "trace_schema.def"
#undef LMS_EVENT
#undef LMS_RECORD
#undef LMS_FIELD
#undef LMS_END
};

#define LMS_TE(ev) ((void)LMS_TE_##ev, #ev)
/* The same field of two line types (read by one piece of code). */
#define LMS_TF2(a, b, name, type) ((void)LMS_TF(a, name, type), LMS_TF(b, name, type))
/* The member every line starts with. */
#define LMS_TF_TYPE "type"
#define LMS_TF(owner, name, type) \
    ((void)sizeof(char[(int)LMS_TF_##owner##__##name == (int)LMS_TT_##type ? 1 : -1]), #name)

#endif
