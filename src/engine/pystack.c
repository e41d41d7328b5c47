/*
 * pystack.c — Python frames of an allocation (see pystack.h).
 *
 * Entry points, looked up once with dlsym(RTLD_DEFAULT): Py_IsInitialized,
 * Py_GetVersion, PyGILState_GetThisThreadState, PyThreadState_GetUnchecked
 * (3.13; _PyThreadState_UncheckedGet before), PyEval_GetFrame (borrowed), then
 * PyFrame_GetCode / PyFrame_GetBack (3.9+, new references) or, on 3.8, the
 * frame's f_code / f_back attributes; PyFrame_GetLineNumber; for names,
 * the code object's co_filename / co_name through PyObject_GetAttrString and
 * PyUnicode_AsUTF8 (PyUnicode_EncodeFSDefault and PyBytes_AsString for a
 * name that is not UTF-8). Capturing calls nothing that can raise; naming saves
 * and restores the thread's pending exception around its calls.
 */
#include "pystack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"

typedef void *obj;

static struct {
    int (*is_initialized)(void);
    const char *(*version)(void);
    obj (*current)(void);            /* the thread state running Python (see holds_gil) */
    obj (*this_thread_state)(void);
    obj (*get_frame)(void);
    obj (*frame_code)(obj);          /* 3.9+ */
    obj (*frame_back)(obj);          /* 3.9+ */
    int (*frame_line)(obj);
    obj (*getattr)(obj, const char *);
    const char *(*utf8)(obj);
    obj (*encode_fs)(obj);           /* PyUnicode_EncodeFSDefault: bytes, undecodable ones kept */
    const char *(*bytes_text)(obj);  /* PyBytes_AsString */
    void (*decref)(obj);
    void (*incref)(obj);
    void (*err_fetch)(obj *, obj *, obj *);
    void (*err_restore)(obj, obj, obj);
    void (*err_clear)(void);
    obj none;
} py;
static int usable;   /* 1: CPython 3.8-3.13 with every entry point; 0: not */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Looks the entry points up and checks the version. */
static void resolve(void)
{
#define FIND(field, name) *(void **)&py.field = dlsym(RTLD_DEFAULT, name)
    FIND(is_initialized, "Py_IsInitialized");
    FIND(version, "Py_GetVersion");
    FIND(current, "PyThreadState_GetUnchecked");           /* 3.13 */
    if (!py.current)
        FIND(current, "_PyThreadState_UncheckedGet");      /* 3.8-3.12 */
    FIND(this_thread_state, "PyGILState_GetThisThreadState");
    FIND(get_frame, "PyEval_GetFrame");
    FIND(frame_code, "PyFrame_GetCode");
    FIND(frame_back, "PyFrame_GetBack");
    FIND(frame_line, "PyFrame_GetLineNumber");
    FIND(getattr, "PyObject_GetAttrString");
    FIND(utf8, "PyUnicode_AsUTF8");
    FIND(encode_fs, "PyUnicode_EncodeFSDefault");
    FIND(bytes_text, "PyBytes_AsString");
    FIND(decref, "Py_DecRef");
    FIND(incref, "Py_IncRef");
    FIND(err_fetch, "PyErr_Fetch");
    FIND(err_restore, "PyErr_Restore");
    FIND(err_clear, "PyErr_Clear");
    FIND(none, "_Py_NoneStruct");
#undef FIND
    if (!py.is_initialized || !py.version || !py.current || !py.this_thread_state || !py.get_frame || !py.frame_line || !py.getattr ||
        !py.utf8 || !py.decref || !py.incref || !py.err_fetch || !py.err_restore || !py.err_clear || !py.none)
        return;   /* not a CPython process (or not one we know) */
    int major = 0, minor = 0;
    if (sscanf(py.version(), "%d.%d", &major, &minor) != 2 || major != 3 || minor < 8 || minor > 13) {
        lms_log(LMS_LEVEL_INFO, "Python %d.%d: no Python frames (3.8 to 3.13 are known)", major, minor);
        return;
    }
    usable = 1;
}

/* The code object of frame f (a new reference), or NULL. */
static obj frame_code(obj f)
{
    return py.frame_code ? py.frame_code(f) : py.getattr(f, "f_code");
}

/* The caller's frame (a new reference), or NULL. */
static obj frame_back(obj f)
{
    if (py.frame_back)
        return py.frame_back(f);
    obj b = py.getattr(f, "f_back");
    if (b == py.none) {
        py.decref(b);
        return NULL;
    }
    return b;
}

/* True when the calling thread holds the GIL: the thread state running
 * Python is this thread's own. (PyGILState_Check would answer, but once a
 * sub-interpreter has been created it answers 1 to every thread; and up to
 * 3.11 the running thread state is one for the whole process, so that it
 * alone does not say which thread runs.) A thread of a sub-interpreter is
 * not recognised: it gets no Python frames. */
static bool holds_gil(void)
{
    obj mine = py.this_thread_state();
    return mine && py.current() == mine;
}

int lms_pystack_capture(lms_pyframe_key *out, int max)
{
    if (!lms_opt.py_stacks || max <= 0)
        return 0;
    pthread_once(&once, resolve);
    if (!usable || !py.is_initialized() || !holds_gil())
        return 0;
    obj f = py.get_frame();   /* borrowed */
    if (!f)
        return 0;
    obj type = NULL, value = NULL, tb = NULL;
    bool guard = !py.frame_back;   /* 3.8 reads attributes: keep the pending exception */
    if (guard)
        py.err_fetch(&type, &value, &tb);
    py.incref(f);
    int n = 0;
    while (f && n < max) {
        obj code = frame_code(f);
        out[n].code = code;   /* the frame keeps it alive */
        out[n].line = py.frame_line(f);
        if (code)
            py.decref(code);
        n++;
        obj back = frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f)
        py.decref(f);
    if (guard)
        py.err_restore(type, value, tb);
    return n;
}

void lms_pystack_keep(const lms_pyframe_key *keys, int n)
{
    if (!usable)
        return;
    for (int i = 0; i < n; i++)
        if (keys[i].code)
            py.incref(keys[i].code);
}

/* Copies attribute `name` of object o as UTF-8 into strings at *at; returns
 * the copy, or "?" when there is none or no room. A name that is not UTF-8
 * (a file name's undecodable bytes, which Python keeps as lone surrogates)
 * is copied as the file system's bytes: the trace writer escapes each byte
 * that is not UTF-8. */
static const char *attr_text(obj o, const char *name, char *strings, size_t cap, size_t *at)
{
    obj a = o ? py.getattr(o, name) : NULL;
    const char *u = a ? py.utf8(a) : NULL;
    obj b = NULL;   /* the bytes form, a new reference */
    if (a && !u && py.encode_fs && py.bytes_text) {
        py.err_clear();
        b = py.encode_fs(a);
        u = b ? py.bytes_text(b) : NULL;
    }
    const char *r = "?";
    if (u) {
        size_t n = strlen(u);
        if (*at + n + 1 <= cap) {
            memcpy(strings + *at, u, n + 1);
            r = strings + *at;
            *at += n + 1;
        }
    }
    if (b)
        py.decref(b);
    if (a)
        py.decref(a);
    return r;
}

int lms_pystack_describe(const lms_pyframe_key *keys, int n, lms_rec_pyframe *out, char *strings, size_t cap)
{
    if (n <= 0 || !usable || !holds_gil())
        return 0;
    obj type = NULL, value = NULL, tb = NULL;
    py.err_fetch(&type, &value, &tb);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        out[i].file = attr_text(keys[i].code, "co_filename", strings, cap, &at);
        out[i].fn = attr_text(keys[i].code, "co_name", strings, cap, &at);
        out[i].line = keys[i].line;
        py.err_clear();   /* never leave an error of ours behind */
    }
    py.err_restore(type, value, tb);
    return n;
}
