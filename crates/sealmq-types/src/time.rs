//! Dates and times as MQ shows them, in UTC, without a time zone database.

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for seconds since the epoch.
pub fn utc(secs: u64, millis: u32) -> String {
    let (date, h, m, s) = parts(secs);
    format!("{date}T{h:02}:{m:02}:{s:02}.{millis:03}Z")
}

/// MQ's DISPLAY form: (`YYYY-MM-DD`, `HH.MM.SS`), as STARTDA/STARTTI and LSTMSGDA/LSTMSGTI.
pub fn mq_date_time(secs: u64) -> (String, String) {
    let (date, h, m, s) = parts(secs);
    (date, format!("{h:02}.{m:02}.{s:02}"))
}

/// Seconds since the epoch now.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn parts(secs: u64) -> (String, u64, u64, u64) {
    let rem = secs % 86_400;
    let (y, mo, d) = civil((secs / 86_400) as i64);
    (
        format!("{y:04}-{mo:02}-{d:02}"),
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
    )
}

/// (year, month, day) of a day counted from 1970-01-01 (Howard Hinnant's civil-from-days).
pub fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0, 5), "1970-01-01T00:00:00.005Z");
        assert_eq!(super::utc(1_795_431_316, 765), "2026-11-23T10:55:16.765Z");
        assert_eq!(super::utc(951_782_400, 0), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            super::mq_date_time(1_795_431_316),
            ("2026-11-23".to_string(), "10.55.16".to_string())
        );
    }
}
