//! Checking a user id and password against the operating system's users through PAM (MQ's
//! IDPWOS), for users the queue manager's password file does not name. libpam is opened at run
//! time (`libpam.so.0`), so a host without it still runs; the PAM service is `sealmq` (without
//! `/etc/pam.d/sealmq`, PAM uses its `other` service). A queue manager that does not run as
//! root can usually check only its own user's password (pam_unix's rule).
//!
//! The only unsafe code of the server besides SO_PEERCRED and rlimits: each call is documented
//! where it is made; the password is copied only into memory PAM frees (and is not logged).

#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::OnceLock;

const PAM_SUCCESS: c_int = 0;
const PAM_PROMPT_ECHO_OFF: c_int = 1;
const PAM_PROMPT_ECHO_ON: c_int = 2;
const PAM_CONV_ERR: c_int = 19;

#[repr(C)]
struct PamMessage {
    msg_style: c_int,
    msg: *const c_char,
}

#[repr(C)]
struct PamResponse {
    resp: *mut c_char,
    resp_retcode: c_int,
}

type ConvFn = unsafe extern "C" fn(
    c_int,
    *mut *const PamMessage,
    *mut *mut PamResponse,
    *mut c_void,
) -> c_int;

#[repr(C)]
struct PamConv {
    conv: ConvFn,
    appdata: *mut c_void,
}

type StartFn =
    unsafe extern "C" fn(*const c_char, *const c_char, *const PamConv, *mut *mut c_void) -> c_int;
type FlagsFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

type SetItemFn = unsafe extern "C" fn(*mut c_void, c_int, *const c_void) -> c_int;

/// PAM_FAIL_DELAY (pam_appl.h): a function PAM calls instead of sleeping after a failure.
const PAM_FAIL_DELAY: c_int = 10;

/// PAM's own delay after a failure is replaced by the authentication gate's (`authgate.rs`),
/// which answers every failure after the same time, whichever module failed.
unsafe extern "C" fn no_delay(_retval: c_int, _usec: libc::c_uint, _appdata: *mut c_void) {}

struct Lib {
    set_item: Option<SetItemFn>,
    start: StartFn,
    authenticate: FlagsFn,
    acct_mgmt: FlagsFn,
    end: FlagsFn,
}

fn lib() -> Option<&'static Lib> {
    static L: OnceLock<Option<Lib>> = OnceLock::new();
    L.get_or_init(|| {
        // SAFETY: dlopen/dlsym with NUL-terminated names; the handle is never closed, so the
        // function pointers stay valid for the process's life. The signatures are PAM's
        // (pam_appl.h).
        unsafe {
            let h = libc::dlopen(c"libpam.so.0".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if h.is_null() {
                return None;
            }
            let sym = |n: &CStr| {
                let p = libc::dlsym(h, n.as_ptr());
                (!p.is_null()).then_some(p)
            };
            Some(Lib {
                set_item: sym(c"pam_set_item")
                    .map(|p| std::mem::transmute::<*mut c_void, SetItemFn>(p)),
                start: std::mem::transmute::<*mut c_void, StartFn>(sym(c"pam_start")?),
                authenticate: std::mem::transmute::<*mut c_void, FlagsFn>(sym(
                    c"pam_authenticate",
                )?),
                acct_mgmt: std::mem::transmute::<*mut c_void, FlagsFn>(sym(c"pam_acct_mgmt")?),
                end: std::mem::transmute::<*mut c_void, FlagsFn>(sym(c"pam_end")?),
            })
        }
    })
    .as_ref()
}

/// Whether PAM can be used on this host.
pub fn available() -> bool {
    lib().is_some()
}

/// Answers PAM's prompts with the password (`appdata` points at it).
unsafe extern "C" fn converse(
    n: c_int,
    msgs: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int {
    if n <= 0 || n > 32 || msgs.is_null() || resp.is_null() || appdata.is_null() {
        return PAM_CONV_ERR;
    }
    // SAFETY: PAM passes `n` messages and expects `n` responses allocated with malloc, which
    // it frees; `appdata` is the CString the caller keeps alive during pam_authenticate.
    unsafe {
        let password = &*(appdata as *const CString);
        let out = libc::calloc(n as usize, std::mem::size_of::<PamResponse>()) as *mut PamResponse;
        if out.is_null() {
            return PAM_CONV_ERR;
        }
        for i in 0..n as usize {
            // Linux-PAM passes an array of pointers to messages.
            let m = *msgs.add(i);
            if m.is_null() {
                continue;
            }
            let style = (*m).msg_style;
            if style == PAM_PROMPT_ECHO_OFF || style == PAM_PROMPT_ECHO_ON {
                (*out.add(i)).resp = libc::strdup(password.as_ptr());
            }
        }
        *resp = out;
    }
    PAM_SUCCESS
}

/// Whether `password` is OS user `user`'s, by PAM (authentication and account checks).
/// `false` when PAM is not available.
pub fn verify(user: &str, password: &str) -> bool {
    let Some(l) = lib() else { return false };
    let (Ok(u), Ok(pw)) = (CString::new(user), CString::new(password)) else {
        return false;
    };
    let conv = PamConv {
        conv: converse,
        appdata: &pw as *const CString as *mut c_void,
    };
    let mut h: *mut c_void = std::ptr::null_mut();
    // SAFETY: the service and user names are valid C strings, `conv` and `pw` outlive the
    // handle, which pam_end releases on every path.
    unsafe {
        let mut rc = (l.start)(c"sealmq".as_ptr(), u.as_ptr(), &conv, &mut h);
        if rc != PAM_SUCCESS || h.is_null() {
            return false;
        }
        if let Some(set) = l.set_item {
            let f: unsafe extern "C" fn(c_int, libc::c_uint, *mut c_void) = no_delay;
            set(h, PAM_FAIL_DELAY, f as *const c_void);
        }
        rc = (l.authenticate)(h, 0);
        if rc == PAM_SUCCESS {
            rc = (l.acct_mgmt)(h, 0);
        }
        (l.end)(h, rc);
        // Wipe our copy of the password.
        let mut v = pw.into_bytes();
        zeroize::Zeroize::zeroize(&mut v);
        rc == PAM_SUCCESS
    }
}
