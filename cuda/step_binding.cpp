// The thin hot path of the native CPU implementations (`cpp`, `fused` on the CPU): a CPython
// extension module, `_step_binding`, built by studylib/native/build.py with the host compiler against
// Python's own headers (nothing else: no numpy headers, no binding library), so a call costs about
// what a C function call from Python costs.
//
// One `Stepper` per backend (studylib.backends.CpuLibraryBackend). At construction it takes the
// address of the backend's `struct RolloutArgs` (rollout_args.h), the addresses of the library's
// rollout and restart entry points, and preallocated output buffers (numpy arrays, passed with
// their addresses; the Stepper keeps references so they live as long as it does). Everything whose
// shape and dtype is fixed is fixed there; a call only checks the actions:
//
//   step(actions)      one step with caller actions -> the prebuilt tuple (obs, reward,
//                      terminated, truncated), views of buffers rewritten in place by the next
//                      call (studylib.VectorCartPole's contract for these implementations).
//   next_step(actions) the same step under gymnasium's NEXT_STEP autoreset (the adapter of
//                      studylib/adapters/gym_vector.py): the envs that finished on the previous step start
//                      their next episode (reward 0, no flags), the observation is the step's
//                      final observation -> (obs, reward, terminated, truncated, {}), fresh
//                      copies as gymnasium's vector envs return.
//   rollout(actions | None, num_steps, policy, final_obs) -> episodes finished (a ctypes-free call).
//   restart(mask)      the restart entry point with a bool mask (N,).
//
// Actions are taken on the fast path only when they are a numpy array (exact type) of shape (N,)
// with an integer or bool dtype and values 0 or 1, read through the buffer protocol with any
// stride. Anything else (lists, torch tensors, wrong shape, dtype or values), and every call while
// the Stepper is disabled (a profiling hook is installed on the backend), goes to the Python
// `fallback` the owner set, which checks, raises the same errors as before, or steps: behaviour
// and error messages are the Python implementation's.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "rollout_args.h"

typedef long long (*RolloutFn)(const RolloutArgs*);
typedef void (*RestartFn)(const RolloutArgs*);

// Above this many environments a call releases the GIL (its work then dwarfs the cost).
static const long long RELEASE_GIL_ABOVE = 4096;

typedef struct {
    PyObject_HEAD
    RolloutArgs* args;  // the backend's ctypes struct (kept alive by `keep`)
    RolloutFn rollout;
    RestartFn restart;
    long long n;
    int32_t* actions;     // (n,) int32: the converted actions of the last call
    float* final_obs;     // (n, 4)
    uint8_t* flags;       // (n,) flags_out
    float* reward;        // (n,)
    uint8_t* terminated;  // (n,) bool
    uint8_t* truncated;   // (n,) bool
    uint8_t* finished;    // (n,) bool: NEXT_STEP's envs that finished on the last step
    uint8_t* mask;        // (n,) bool: scratch restart mask
    uint8_t* status;      // [0] final obs recorded by the last rollout call; [1] next_step since reset
    int enabled;
    PyObject* ndarray_type;
    PyObject* step_result;       // tuple (obs, reward, terminated, truncated)
    PyObject* next_copies;       // (final_obs.copy, reward.copy, terminated.copy, truncated.copy)
    PyObject* keep;              // the objects whose memory the pointers above point into
    PyObject* fallback;          // callable(actions) for step
    PyObject* next_fallback;     // callable(actions) for next_step
    PyObject* guard_dict;        // the wrapped env's __dict__ (next_step), or null
    PyObject* guard_step;        // what its "step" must be for next_step to take the fast path
} Stepper;

static PyObject *STR_STEP, *STR_RESTART, *STR_FINAL_OBS;  // interned at module init

static void* address_of(PyObject* value) { return PyLong_AsVoidPtr(value); }

static int Stepper_init(Stepper* self, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"args", "rollout", "restart", "n", "buffers", "step_result", "next_copies",
                                  "ndarray_type", "keep", nullptr};
    PyObject *a, *rollout, *restart, *buffers, *step_result, *next_copies, *ndarray_type, *keep;
    long long n;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOLO!O!O!OO", (char**)names, &a, &rollout, &restart, &n,
                                     &PyTuple_Type, &buffers, &PyTuple_Type, &step_result, &PyTuple_Type, &next_copies,
                                     &ndarray_type, &keep))
        return -1;
    if (PyTuple_GET_SIZE(buffers) != 9) {
        PyErr_SetString(PyExc_ValueError, "buffers: the addresses of actions, final_obs, flags, reward, "
                                          "terminated, truncated, finished, mask, status");
        return -1;
    }
    self->args = (RolloutArgs*)address_of(a);
    self->rollout = (RolloutFn)address_of(rollout);
    self->restart = (RestartFn)address_of(restart);
    void* p[9];
    for (int i = 0; i < 9; ++i) p[i] = address_of(PyTuple_GET_ITEM(buffers, i));
    if (PyErr_Occurred()) return -1;
    self->n = n;
    self->actions = (int32_t*)p[0];
    self->final_obs = (float*)p[1];
    self->flags = (uint8_t*)p[2];
    self->reward = (float*)p[3];
    self->terminated = (uint8_t*)p[4];
    self->truncated = (uint8_t*)p[5];
    self->finished = (uint8_t*)p[6];
    self->mask = (uint8_t*)p[7];
    self->status = (uint8_t*)p[8];
    self->enabled = 1;
    Py_INCREF(ndarray_type); Py_XSETREF(self->ndarray_type, ndarray_type);
    Py_INCREF(step_result); Py_XSETREF(self->step_result, step_result);
    if (PyTuple_GET_SIZE(next_copies) != 4 || PyTuple_GET_SIZE(step_result) != 4) {
        PyErr_SetString(PyExc_ValueError, "step_result and next_copies: four each");
        return -1;
    }
    Py_INCREF(next_copies); Py_XSETREF(self->next_copies, next_copies);
    Py_INCREF(keep); Py_XSETREF(self->keep, keep);
    return 0;
}

static int Stepper_traverse(Stepper* self, visitproc visit, void* arg) {
    Py_VISIT(self->ndarray_type);
    Py_VISIT(self->step_result);
    Py_VISIT(self->next_copies);
    Py_VISIT(self->keep);
    Py_VISIT(self->fallback);
    Py_VISIT(self->next_fallback);
    Py_VISIT(self->guard_dict);
    Py_VISIT(self->guard_step);
    return 0;
}

static int Stepper_clear(Stepper* self) {
    self->enabled = 0;
    Py_CLEAR(self->ndarray_type);
    Py_CLEAR(self->step_result);
    Py_CLEAR(self->next_copies);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->next_fallback);
    Py_CLEAR(self->guard_dict);
    Py_CLEAR(self->guard_step);
    return 0;
}

static void Stepper_dealloc(Stepper* self) {
    PyObject_GC_UnTrack(self);
    Stepper_clear(self);
    Py_TYPE(self)->tp_free((PyObject*)self);
}

// Reads one element of a 1-D buffer of the given struct format character as an integer.
template <class T>
static int convert(const char* data, Py_ssize_t stride, long long n, int32_t* out) {
    for (long long i = 0; i < n; ++i) {
        T v;
        memcpy(&v, data + i * stride, sizeof(T));
        if (v != (T)0 && v != (T)1) return 0;
        out[i] = (int32_t)v;
    }
    return 1;
}

// The actions into self->actions if `obj` is a numpy array (N,) of 0/1 integers or bools: 1;
// 0 if the fast path does not take it (the fallback decides), -1 on an error raised here.
static int take_actions(Stepper* self, PyObject* obj) {
    if (!self->enabled || (PyObject*)Py_TYPE(obj) != self->ndarray_type) return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = 0;
    const char* f = view.format ? view.format : "B";
    if (*f == '@' || *f == '=' || *f == '<' || *f == '|') ++f;
    if (view.ndim == 1 && view.shape[0] == self->n && f[0] && !f[1]) {
        const char* d = (const char*)view.buf;
        const Py_ssize_t s = view.strides[0];
        const long long n = self->n;
        int32_t* out = self->actions;
        switch (f[0]) {
            case '?': ok = convert<uint8_t>(d, s, n, out); break;
            case 'b': ok = convert<int8_t>(d, s, n, out); break;
            case 'B': ok = convert<uint8_t>(d, s, n, out); break;
            case 'h': ok = convert<int16_t>(d, s, n, out); break;
            case 'H': ok = convert<uint16_t>(d, s, n, out); break;
            case 'i': ok = convert<int32_t>(d, s, n, out); break;
            case 'I': ok = convert<uint32_t>(d, s, n, out); break;
            case 'l': case 'q': ok = view.itemsize == 8 ? convert<int64_t>(d, s, n, out) : view.itemsize == 4 ? convert<int32_t>(d, s, n, out) : 0; break;
            case 'L': case 'Q': ok = view.itemsize == 8 ? convert<uint64_t>(d, s, n, out) : view.itemsize == 4 ? convert<uint32_t>(d, s, n, out) : 0; break;
            default: ok = 0;
        }
    }
    PyBuffer_Release(&view);
    return ok;
}

static long long run_rollout(Stepper* self) {
    long long done;
    if (self->n > RELEASE_GIL_ABOVE) {
        Py_BEGIN_ALLOW_THREADS
        done = self->rollout(self->args);
        Py_END_ALLOW_THREADS
    } else {
        done = self->rollout(self->args);
    }
    return done;
}

static void run_restart(Stepper* self) {
    if (self->n > RELEASE_GIL_ABOVE) {
        Py_BEGIN_ALLOW_THREADS
        self->restart(self->args);
        Py_END_ALLOW_THREADS
    } else {
        self->restart(self->args);
    }
}

// One step with self->actions, the final observations recorded; splits the flags.
static void one_step(Stepper* self) {
    RolloutArgs* a = self->args;
    a->actions = self->actions;
    a->final_obs = self->final_obs;
    a->num_steps = 1;
    a->policy = CP_POLICY_ACTIONS;
    run_rollout(self);
    self->status[0] = 1;
    const long long n = self->n;
    for (long long i = 0; i < n; ++i) {
        const uint8_t fl = self->flags[i];
        self->reward[i] = 1.0f;
        self->terminated[i] = fl & 1;
        self->truncated[i] = (fl >> 1) & 1;
    }
}

static PyObject* call_fallback(PyObject* fallback, PyObject* actions) {
    if (!fallback) {
        PyErr_SetString(PyExc_RuntimeError, "Stepper: no fallback set");
        return nullptr;
    }
    return PyObject_CallOneArg(fallback, actions);
}

static PyObject* Stepper_step(Stepper* self, PyObject* actions) {
    if (!take_actions(self, actions)) return call_fallback(self->fallback, actions);
    one_step(self);
    Py_INCREF(self->step_result);
    return self->step_result;
}

// next_step's bookkeeping is the adapter's calls of env.step, env.restart and env.final_obs, done
// here: it holds while those are the env's own (a caller that replaced one on the instance, as a
// test injecting states does, gets the Python path that calls it).
static int guard_holds(Stepper* self) {
    if (!self->guard_dict) return 1;
    return PyDict_GetItemWithError(self->guard_dict, STR_STEP) == self->guard_step &&
           !PyDict_GetItemWithError(self->guard_dict, STR_RESTART) &&
           !PyDict_GetItemWithError(self->guard_dict, STR_FINAL_OBS) && !PyErr_Occurred();
}

static PyObject* Stepper_next_step(Stepper* self, PyObject* actions) {
    if (!guard_holds(self) || !take_actions(self, actions)) {
        if (PyErr_Occurred()) return nullptr;
        return call_fallback(self->next_fallback, actions);
    }
    one_step(self);
    const long long n = self->n;
    int any = 0;
    for (long long i = 0; i < n; ++i) any |= self->finished[i];
    if (any) {  // the envs that finished last step start their next episode; their action was ignored
        memcpy(self->mask, self->finished, (size_t)n);
        RolloutArgs* a = self->args;
        a->reset_mask = self->mask;
        a->final_obs = self->final_obs;  // their final observation becomes the new first one
        run_restart(self);
        for (long long i = 0; i < n; ++i) {
            if (self->mask[i]) {
                self->reward[i] = 0.0f;
                self->terminated[i] = 0;
                self->truncated[i] = 0;
            }
        }
    }
    for (long long i = 0; i < n; ++i) self->finished[i] = self->terminated[i] | self->truncated[i];
    self->status[1] = 1;
    PyObject* info = PyDict_New();
    if (!info) return nullptr;
    PyObject* out = PyTuple_New(5);
    if (!out) {
        Py_DECREF(info);
        return nullptr;
    }
    // Fresh arrays, as gymnasium's own vector envs return (callers keep last step's observation):
    // each buffer's bound ``copy``, made once.
    for (int i = 0; i < 4; ++i) {
        PyObject* item = PyObject_CallNoArgs(PyTuple_GET_ITEM(self->next_copies, i));
        if (!item) {
            Py_DECREF(out);
            return nullptr;
        }
        PyTuple_SET_ITEM(out, i, item);
    }
    PyTuple_SET_ITEM(out, 4, info);
    return out;
}

// rollout(actions, num_steps, policy, final_obs) -> episodes finished. `actions`: None, or an int32
// C-contiguous array of shape (N,) (the caller converted it); the caller checked the rest.
static PyObject* Stepper_rollout(Stepper* self, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 4) {
        PyErr_SetString(PyExc_TypeError, "rollout(actions, num_steps, policy, final_obs)");
        return nullptr;
    }
    const long num_steps = PyLong_AsLong(argv[1]);
    const long policy = PyLong_AsLong(argv[2]);
    const int final_obs = PyObject_IsTrue(argv[3]);
    if (PyErr_Occurred()) return nullptr;
    Py_buffer view;
    int have_view = 0;
    const int32_t* actions = nullptr;
    if (argv[0] != Py_None) {
        if (PyObject_GetBuffer(argv[0], &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return nullptr;
        have_view = 1;
        if (view.len != (Py_ssize_t)(self->n * 4) || view.itemsize != 4) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_ValueError, "actions must be int32 of shape (N,)");
            return nullptr;
        }
        actions = (const int32_t*)view.buf;
    }
    RolloutArgs* a = self->args;
    a->actions = actions;
    a->final_obs = final_obs ? self->final_obs : nullptr;
    a->num_steps = (int32_t)num_steps;
    a->policy = (int32_t)policy;
    const long long done = run_rollout(self);
    self->status[0] = (uint8_t)final_obs;
    if (have_view) PyBuffer_Release(&view);
    return PyLong_FromLongLong(done);
}

// restart(mask): `mask` a bool C-contiguous array of shape (N,) (checked by the caller).
static PyObject* Stepper_restart(Stepper* self, PyObject* mask) {
    Py_buffer view;
    if (PyObject_GetBuffer(mask, &view, PyBUF_C_CONTIGUOUS) < 0) return nullptr;
    if (view.len != (Py_ssize_t)self->n) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "a restart mask must be bool of shape (N,)");
        return nullptr;
    }
    RolloutArgs* a = self->args;
    a->reset_mask = (const uint8_t*)view.buf;
    a->final_obs = self->final_obs;
    run_restart(self);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject* Stepper_set_fallbacks(Stepper* self, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 2) {
        PyErr_SetString(PyExc_TypeError, "set_fallbacks(step_fallback, next_step_fallback)");
        return nullptr;
    }
    for (int i = 0; i < 2; ++i) {
        if (argv[i] != Py_None && !PyCallable_Check(argv[i])) {
            PyErr_SetString(PyExc_TypeError, "a fallback must be callable or None");
            return nullptr;
        }
    }
    if (argv[0] != Py_None) { Py_INCREF(argv[0]); Py_XSETREF(self->fallback, argv[0]); }
    if (argv[1] != Py_None) { Py_INCREF(argv[1]); Py_XSETREF(self->next_fallback, argv[1]); }
    Py_RETURN_NONE;
}

static PyObject* Stepper_set_guard(Stepper* self, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 2 || !PyDict_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError, "set_guard(env.__dict__, env.step)");
        return nullptr;
    }
    Py_INCREF(argv[0]); Py_XSETREF(self->guard_dict, argv[0]);
    Py_INCREF(argv[1]); Py_XSETREF(self->guard_step, argv[1]);
    Py_RETURN_NONE;
}

static PyObject* Stepper_get_enabled(Stepper* self, void*) { return PyBool_FromLong(self->enabled); }

static int Stepper_set_enabled(Stepper* self, PyObject* value, void*) {
    const int v = value ? PyObject_IsTrue(value) : 0;
    if (v < 0) return -1;
    self->enabled = v;
    return 0;
}

static PyMethodDef Stepper_methods[] = {
    {"step", (PyCFunction)Stepper_step, METH_O, "step(actions) -> (obs, reward, terminated, truncated) views"},
    {"next_step", (PyCFunction)Stepper_next_step, METH_O,
     "next_step(actions) -> (obs, reward, terminated, truncated, {}) under NEXT_STEP autoreset"},
    {"rollout", (PyCFunction)(void (*)(void))Stepper_rollout, METH_FASTCALL,
     "rollout(actions | None, num_steps, policy, final_obs) -> episodes finished"},
    {"restart", (PyCFunction)Stepper_restart, METH_O, "restart(mask): the restart entry point"},
    {"set_fallbacks", (PyCFunction)(void (*)(void))Stepper_set_fallbacks, METH_FASTCALL,
     "set_fallbacks(step, next_step): the Python callables for what the fast path does not take"},
    {"set_guard", (PyCFunction)(void (*)(void))Stepper_set_guard, METH_FASTCALL,
     "set_guard(env.__dict__, env.step): next_step takes the fast path only while the env's step is "
     "that one and its restart and final_obs are its class's"},
    {nullptr, nullptr, 0, nullptr},
};

static PyGetSetDef Stepper_getset[] = {
    {"enabled", (getter)Stepper_get_enabled, (setter)Stepper_set_enabled,
     "False: every step goes to the fallback (a profiling hook wants to see the calls)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

static PyTypeObject StepperType = {PyVarObject_HEAD_INIT(nullptr, 0)};

static PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_step_binding",
                                 "The thin per-call binding of studylib's native CPU implementations.", -1,
                                 nullptr};

PyMODINIT_FUNC PyInit__step_binding(void) {
    StepperType.tp_name = "_step_binding.Stepper";
    StepperType.tp_basicsize = sizeof(Stepper);
    StepperType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    StepperType.tp_new = PyType_GenericNew;
    StepperType.tp_init = (initproc)Stepper_init;
    StepperType.tp_dealloc = (destructor)Stepper_dealloc;
    StepperType.tp_traverse = (traverseproc)Stepper_traverse;
    StepperType.tp_clear = (inquiry)Stepper_clear;
    StepperType.tp_methods = Stepper_methods;
    StepperType.tp_getset = Stepper_getset;
    StepperType.tp_doc = "One backend's step, next_step, rollout and restart (see cuda/step_binding.cpp).";
    if (PyType_Ready(&StepperType) < 0) return nullptr;
    STR_STEP = PyUnicode_InternFromString("step");
    STR_RESTART = PyUnicode_InternFromString("restart");
    STR_FINAL_OBS = PyUnicode_InternFromString("final_obs");
    if (!STR_STEP || !STR_RESTART || !STR_FINAL_OBS) return nullptr;
    PyObject* m = PyModule_Create(&module_def);
    if (!m) return nullptr;
    Py_INCREF(&StepperType);
    if (PyModule_AddObject(m, "Stepper", (PyObject*)&StepperType) < 0) {
        Py_DECREF(&StepperType);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
