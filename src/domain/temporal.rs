//! Time named in a question — "last week", "in May 2023", "on October 13",
//! "3 days ago", "上周", "去年", "5月3日" — resolved against the query's time
//! into a window of creation times (`[retrieval.temporal]`).
//!
//! A memory is what was said when it was said: a question that names a time
//! is most often about what was told then, or shortly after (people tell of
//! an event in the days after it). So the window is the named period
//! extended by a *telling lag*: its own length, at least a week and at most
//! a month. Candidates created in the window get a factor in ranking
//! (`ranking::rank`); nothing is filtered out, so a memory that names the
//! time in its text, or a strong match told later, still ranks.
//!
//! Rules, case-insensitive, all times UTC (Mnemo does not know a user's time
//! zone), weeks from Monday:
//! - days: today, tonight, yesterday, last night, the day before yesterday;
//!   今天, 今晚, 昨天, 昨晚, 前天;
//! - this/last/past week, weekend, month, year; 这周, 本周, 上周, 上个星期,
//!   本月, 上个月, 今年, 去年, 前年;
//! - N days/weeks/months/years ago (digits or the words one to twelve, a,
//!   an); N天前, N周前, N个月前, N年前 (digits or Chinese numerals);
//! - a month with an optional day and year ("May 3, 2023", "3 May 2023",
//!   "in June", "June 2023"); YYYY年, M月, M月D日/号, YYYY年M月D日. "May"
//!   alone counts only after a preposition ("in May"), so that "May I…"
//!   does not. A date without a year is its latest occurrence not after the
//!   query's time;
//! - a year after a preposition: "in 2022", "during 2021", "since 2020";
//!   after "since", "after" or "from" a month or year runs to today;
//! - a weekday after "last" or "on": its latest occurrence before today.
//!
//! Several expressions ("between August 11 and August 15") give the span
//! from the earliest start to the latest end. Phrases that only order
//! ("recently", "before", "after") are not a window.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};
use regex::Regex;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The period a query names, and the window of creation times it favours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// The named period: `[start, end)`.
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// The words of the query that named it (several joined by " … ").
    pub phrase: String,
}

impl TimeWindow {
    /// The end of the window a memory's creation time is compared with: the
    /// period's end plus the telling lag (its length, within a week and a
    /// month).
    pub fn told_until(&self) -> DateTime<Utc> {
        let lag = (self.end - self.start).clamp(Duration::days(7), Duration::days(31));
        self.end + lag
    }

    /// Whether a memory created at `at` falls in the window.
    pub fn holds(&self, at: DateTime<Utc>) -> bool {
        at >= self.start && at < self.told_until()
    }
}

/// What the temporal signal did to a hit (`breakdown.temporal`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TemporalSignal {
    /// The words of the query that named a time.
    pub phrase: String,
    /// The window of creation times favoured: the named period's start…
    pub start: DateTime<Utc>,
    /// …and its end plus the telling lag (exclusive).
    pub until: DateTime<Utc>,
    /// Whether this memory was created in the window.
    pub in_window: bool,
    /// The factor applied to the score: 1 + weight in the window, else 1.
    pub factor: f32,
}

impl TemporalSignal {
    /// The signal for a memory created at `created_at`.
    pub fn of(window: &TimeWindow, created_at: DateTime<Utc>, weight: f32) -> Self {
        let in_window = window.holds(created_at);
        TemporalSignal {
            phrase: window.phrase.clone(),
            start: window.start,
            until: window.told_until(),
            in_window,
            factor: if in_window { 1.0 + weight } else { 1.0 },
        }
    }
}

/// The stage's parameters (`[retrieval.temporal]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TemporalParams {
    /// Score × (1 + weight) for a memory created in the window.
    pub weight: f32,
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Every pattern here is a constant: a typo fails the unit tests, not a query.
fn pattern(p: &str) -> Regex {
    Regex::new(p).expect("a valid pattern")
}

/// The English month names ("sept" as well), one alternation.
const MONTH_ALT: &str =
    "january|february|march|april|may|june|july|august|september|sept|october|november|december";

static EN_MONTH_DATE: LazyLock<Regex> = LazyLock::new(|| {
    // "[in|on|…] [13[th] [of]] May [13[th]][,] [2023]"
    pattern(&format!(
        r"(?i)\b(?P<prep>in|on|during|since|from|of|early|late|mid|by|until|before|after|around|last|this)?\s*(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{MONTH_ALT})\b(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>(?:19|20)\d{{2}})\b)?"
    ))
});

static EN_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)\b(in|during|since|of|from|around|throughout|after)\s+(?:the\s+year\s+)?((?:19|20)\d{2})\b",
    )
});

static EN_RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)\b(?:(the day before yesterday)|(today|tonight|this morning|this afternoon|this evening)|(yesterday|last night)|(this|last|past|previous)\s+(week|weekend|month|year))\b",
    )
});

static EN_AGO: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)\b(\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(day|week|month|year)s?\s+ago\b",
    )
});

static EN_WEEKDAY: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(?i)\b(?:last|on|this past)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
    )
});

/// Chinese numerals up to 99, or digits.
const ZH_NUM: &str = r"[0-9]{1,4}|[零〇一二两三四五六七八九十]{1,3}";

static ZH_DATE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"(?P<year>[0-9]{{4}})年(?:(?P<ymonth>{ZH_NUM})月(?:份)?(?:(?P<yday>{ZH_NUM})[日号])?)?|(?P<month>{ZH_NUM})月(?:份)?(?:(?P<day>{ZH_NUM})[日号])?"
    ))
});

static ZH_RELATIVE: LazyLock<Regex> = LazyLock::new(|| {
    pattern(
        r"(前天)|(今天|今日|今早|今晚|今天早上)|(昨天|昨日|昨晚)|(上上周|上周|上个星期|上星期|上个礼拜|上礼拜|这周|本周|这个星期|这星期|上个月|上月|这个月|本月|前年|去年|今年)",
    )
});

static ZH_AGO: LazyLock<Regex> = LazyLock::new(|| {
    pattern(&format!(
        r"({ZH_NUM})\s*(天|日|周|个星期|星期|个礼拜|个月|年)(?:之)?前"
    ))
});

/// The window the query names, resolved against `now`; `None` when it names
/// no time.
pub fn window_of(query: &str, now: DateTime<Utc>) -> Option<TimeWindow> {
    let today = now.date_naive();
    // (start, end, phrase, a calendar date rather than a relative phrase)
    let mut found: Vec<(NaiveDate, NaiveDate, String, bool)> = Vec::new();
    let mut push = |span: Option<(NaiveDate, NaiveDate)>, phrase: &str, calendar: bool| {
        if let Some((start, end)) = span {
            if start < end {
                found.push((start, end, phrase.trim().to_string(), calendar));
            }
        }
    };

    for c in EN_RELATIVE.captures_iter(query) {
        let phrase = c.get(0).map_or("", |m| m.as_str());
        let span = if c.get(1).is_some() {
            day(today - Duration::days(2))
        } else if c.get(2).is_some() {
            day(today)
        } else if c.get(3).is_some() {
            day(today - Duration::days(1))
        } else {
            let which = c[4].to_lowercase();
            let unit = c[5].to_lowercase();
            relative_unit(today, &which, &unit)
        };
        push(span, phrase, false);
    }
    for c in EN_AGO.captures_iter(query) {
        let n = english_number(&c[1]);
        let unit = c[2].to_lowercase();
        push(n.and_then(|n| ago(today, n, &unit)), &c[0], false);
    }
    for c in EN_WEEKDAY.captures_iter(query) {
        let wanted = WEEKDAYS
            .iter()
            .position(|w| c[1].eq_ignore_ascii_case(w))
            .and_then(|i| Weekday::try_from(i as u8).ok());
        push(wanted.and_then(|w| last_weekday(today, w)), &c[0], false);
    }
    let mut month_years: Vec<std::ops::Range<usize>> = Vec::new();
    for c in EN_MONTH_DATE.captures_iter(query) {
        let month_word = c["month"].to_lowercase();
        let day_n = c
            .name("day1")
            .or_else(|| c.name("day2"))
            .and_then(|d| d.as_str().parse::<u32>().ok());
        let year = c.name("year").and_then(|y| y.as_str().parse::<i32>().ok());
        // A month alone needs a preposition: "in May", not "May I" or "a
        // march".
        if day_n.is_none() && year.is_none() && c.name("prep").is_none() {
            continue;
        }
        let Some(month) = MONTHS
            .iter()
            .position(|m| m.starts_with(month_word.as_str()))
            .map(|i| i as u32 + 1)
        else {
            continue;
        };
        if let Some(y) = c.name("year") {
            month_years.push(y.range());
        }
        let open = c.name("prep").map(|p| p.as_str());
        push(
            onwards(calendar(today, year, Some(month), day_n), open, today),
            &c[0],
            true,
        );
    }
    for c in EN_YEAR.captures_iter(query) {
        let y = c.get(2).expect("group 2");
        // A year already read as a month's ("May 2023") is not a second window.
        if month_years.iter().any(|r| r.contains(&y.start())) {
            continue;
        }
        push(
            onwards(
                calendar(today, y.as_str().parse().ok(), None, None),
                Some(&c[1]),
                today,
            ),
            &c[0],
            true,
        );
    }

    for c in ZH_RELATIVE.captures_iter(query) {
        let phrase = &c[0];
        let span = if c.get(1).is_some() {
            day(today - Duration::days(2))
        } else if c.get(2).is_some() {
            day(today)
        } else if c.get(3).is_some() {
            day(today - Duration::days(1))
        } else {
            match phrase {
                "上上周" => week(today - Duration::days(14)),
                "上周" | "上个星期" | "上星期" | "上个礼拜" | "上礼拜" => {
                    week(today - Duration::days(7))
                }
                "这周" | "本周" | "这个星期" | "这星期" => week(today),
                "上个月" | "上月" => month_back(today, 1),
                "这个月" | "本月" => month_back(today, 0),
                "前年" => year_span(today.year() - 2),
                "去年" => year_span(today.year() - 1),
                _ => year_span(today.year()),
            }
        };
        push(span, phrase, false);
    }
    for c in ZH_AGO.captures_iter(query) {
        let unit = match &c[2] {
            "天" | "日" => "day",
            "周" | "个星期" | "星期" | "个礼拜" => "week",
            "个月" => "month",
            _ => "year",
        };
        push(
            chinese_number(&c[1]).and_then(|n| ago(today, n, unit)),
            &c[0],
            false,
        );
    }
    for c in ZH_DATE.captures_iter(query) {
        let year = c.name("year").and_then(|y| y.as_str().parse::<i32>().ok());
        let number = |a: &str, b: &str| {
            c.name(a)
                .or_else(|| c.name(b))
                .and_then(|m| chinese_number(m.as_str()))
        };
        let (month, day_n) = (number("ymonth", "month"), number("yday", "day"));
        push(calendar(today, year, month, day_n), &c[0], true);
    }

    // A calendar date outranks a relative phrase ("last weekend before
    // April 10, 2023" is about April, not the weekend before the question).
    if found.iter().any(|f| f.3) {
        found.retain(|f| f.3);
    }
    let start = found.iter().map(|f| f.0).min()?;
    let end = found.iter().map(|f| f.1).max()?;
    let phrase = found
        .iter()
        .map(|f| f.2.as_str())
        .collect::<Vec<_>>()
        .join(" … ");
    Some(TimeWindow {
        start: midnight(start),
        end: midnight(end),
        phrase,
    })
}

/// "since May", "after 2020", "from June": from the period's start to today.
fn onwards(
    span: Option<(NaiveDate, NaiveDate)>,
    preposition: Option<&str>,
    today: NaiveDate,
) -> Option<(NaiveDate, NaiveDate)> {
    let (start, end) = span?;
    let open = preposition.is_some_and(|p| {
        ["since", "after", "from"]
            .iter()
            .any(|w| p.eq_ignore_ascii_case(w))
    });
    Some((
        start,
        if open {
            end.max(today.succ_opt()?)
        } else {
            end
        },
    ))
}

fn midnight(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight exists"))
}

fn day(d: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    Some((d, d.succ_opt()?))
}

/// The Monday-to-Monday week holding `d`.
fn week(d: NaiveDate) -> Option<(NaiveDate, NaiveDate)> {
    let monday = d - Duration::days(d.weekday().num_days_from_monday() as i64);
    Some((monday, monday + Duration::days(7)))
}

fn month_span(year: i32, month: u32) -> Option<(NaiveDate, NaiveDate)> {
    let start = NaiveDate::from_ymd_opt(year, month, 1)?;
    let end = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    Some((start, end))
}

fn month_back(today: NaiveDate, n: u32) -> Option<(NaiveDate, NaiveDate)> {
    let months = today.year() * 12 + today.month0() as i32 - n as i32;
    month_span(months.div_euclid(12), months.rem_euclid(12) as u32 + 1)
}

fn year_span(year: i32) -> Option<(NaiveDate, NaiveDate)> {
    Some((
        NaiveDate::from_ymd_opt(year, 1, 1)?,
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?,
    ))
}

/// "this/last/past/previous week|weekend|month|year".
fn relative_unit(today: NaiveDate, which: &str, unit: &str) -> Option<(NaiveDate, NaiveDate)> {
    let back = which != "this";
    match (unit, which) {
        // "past week": the seven days up to today, not the calendar week.
        ("week", "past") => Some((today - Duration::days(7), today.succ_opt()?)),
        ("month", "past") => Some((today - Duration::days(30), today.succ_opt()?)),
        ("year", "past") => Some((today - Duration::days(365), today.succ_opt()?)),
        ("week", _) => week(if back {
            today - Duration::days(7)
        } else {
            today
        }),
        ("weekend", _) => {
            // The latest Saturday and Sunday before today ("this weekend"
            // on a weekend day: this one).
            let mut saturday = today - Duration::days(1);
            while saturday.weekday() != Weekday::Sat {
                saturday -= Duration::days(1);
            }
            if !back && matches!(today.weekday(), Weekday::Sat | Weekday::Sun) {
                saturday =
                    today - Duration::days(today.weekday().num_days_from_monday() as i64 - 5);
            }
            Some((saturday, saturday + Duration::days(2)))
        }
        ("month", _) => month_back(today, back as u32),
        _ => year_span(today.year() - back as i32),
    }
}

/// "N days/weeks/months/years ago": that day, the week holding that day,
/// that month, that year.
fn ago(today: NaiveDate, n: u32, unit: &str) -> Option<(NaiveDate, NaiveDate)> {
    match unit {
        "day" => day(today - Duration::days(n as i64)),
        "week" => week(today - Duration::weeks(n as i64)),
        "month" => month_back(today, n),
        _ => year_span(today.year() - n as i32),
    }
}

/// The latest `wanted` weekday before today.
fn last_weekday(today: NaiveDate, wanted: Weekday) -> Option<(NaiveDate, NaiveDate)> {
    let mut d = today.pred_opt()?;
    while d.weekday() != wanted {
        d = d.pred_opt()?;
    }
    day(d)
}

/// A calendar date, month or year. Without a year, the latest occurrence
/// that starts no later than today.
fn calendar(
    today: NaiveDate,
    year: Option<i32>,
    month: Option<u32>,
    day_n: Option<u32>,
) -> Option<(NaiveDate, NaiveDate)> {
    let resolve = |y: i32| -> Option<(NaiveDate, NaiveDate)> {
        match (month, day_n) {
            (Some(m), Some(d)) => day(NaiveDate::from_ymd_opt(y, m, d)?),
            (Some(m), None) => month_span(y, m),
            (None, _) => year_span(y),
        }
    };
    match year {
        Some(y) => resolve(y),
        None if month.is_none() => None,
        None => {
            let this_year = resolve(today.year());
            match this_year {
                Some((start, end)) if start <= today => Some((start, end)),
                _ => resolve(today.year() - 1),
            }
        }
    }
}

fn english_number(word: &str) -> Option<u32> {
    let w = word.to_lowercase();
    if let Ok(n) = w.parse() {
        return Some(n);
    }
    let words = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve",
    ];
    match w.as_str() {
        "a" | "an" => Some(1),
        _ => words.iter().position(|x| *x == w).map(|i| i as u32 + 1),
    }
}

/// Digits, or a Chinese numeral below 100 (十二, 二十三, 两).
fn chinese_number(s: &str) -> Option<u32> {
    if let Ok(n) = s.parse() {
        return Some(n);
    }
    let digit = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|i| i as u32)
    };
    let digit = |c: char| match c {
        '〇' => Some(0),
        '两' => Some(2),
        c => digit(c),
    };
    let chars: Vec<char> = s.chars().collect();
    match chars.as_slice() {
        [c] if *c == '十' => Some(10),
        [c] => digit(*c),
        ['十', u] => Some(10 + digit(*u)?),
        [t, '十'] => Some(digit(*t)? * 10),
        [t, '十', u] => Some(digit(*t)? * 10 + digit(*u)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tuesday 2023-10-24, noon.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2023, 10, 24, 12, 0, 0).unwrap()
    }

    fn span(q: &str) -> Option<(String, String)> {
        window_of(q, now()).map(|w| {
            (
                w.start.format("%Y-%m-%d").to_string(),
                w.end.format("%Y-%m-%d").to_string(),
            )
        })
    }

    fn is(q: &str, start: &str, end: &str) {
        assert_eq!(
            span(q),
            Some((start.to_string(), end.to_string())),
            "query {q:?}"
        );
    }

    #[test]
    fn english_days_weeks_months_and_years() {
        is("what did I eat yesterday?", "2023-10-23", "2023-10-24");
        is("the day before yesterday", "2023-10-22", "2023-10-23");
        is(
            "what did I say last week about the trip",
            "2023-10-16",
            "2023-10-23",
        );
        is("plans this week", "2023-10-23", "2023-10-30");
        is("what happened last weekend", "2023-10-21", "2023-10-23");
        is("Last month I moved", "2023-09-01", "2023-10-01");
        is("books I read last year", "2022-01-01", "2023-01-01");
        is("3 days ago", "2023-10-21", "2023-10-22");
        is("a month ago", "2023-09-01", "2023-10-01");
        is("two years ago", "2021-01-01", "2022-01-01");
        is("what did I do on Friday", "2023-10-20", "2023-10-21");
        is("since last Monday", "2023-10-23", "2023-10-24");
    }

    #[test]
    fn english_calendar_dates_resolve_to_the_latest_occurrence() {
        is(
            "When did Melanie go camping in June?",
            "2023-06-01",
            "2023-07-01",
        );
        // December has not come yet in 2023: the last one.
        is("the party in December", "2022-12-01", "2023-01-01");
        is("what did we do last June", "2023-06-01", "2023-07-01");
        is(
            "What painting did she show on October 13, 2023?",
            "2023-10-13",
            "2023-10-14",
        );
        is("on 16 August, 2023", "2023-08-16", "2023-08-17");
        is("the 3rd of May", "2023-05-03", "2023-05-04");
        is(
            "What did John adopt in April 2022?",
            "2022-04-01",
            "2022-05-01",
        );
        is(
            "What did Caroline research in 2022?",
            "2022-01-01",
            "2023-01-01",
        );
        is("what changed since May", "2023-05-01", "2023-10-25");
        is("my projects after 2021", "2021-01-01", "2023-10-25");
        is(
            "What did Maria do last weekend before April 10, 2023?",
            "2023-04-10",
            "2023-04-11",
        );
        is(
            "Where was John between August 11 and August 15 2023?",
            "2023-08-11",
            "2023-08-16",
        );
    }

    #[test]
    fn words_that_are_not_times_name_none() {
        for q in [
            "May I ask what tea Alice likes?",
            "what may have caused the outage",
            "order 2023 shipped to locker 12",
            "what does Alice drink",
            "recently I started running",
            "a march for climate",
            "我有什么忌口吗",
            "一个月有多少天",
        ] {
            assert_eq!(span(q), None, "query {q:?}");
        }
    }

    #[test]
    fn chinese_expressions() {
        is("我上周说了什么", "2023-10-16", "2023-10-23");
        is("昨天吃了什么", "2023-10-23", "2023-10-24");
        is("前天", "2023-10-22", "2023-10-23");
        is("去年去了哪里旅游", "2022-01-01", "2023-01-01");
        is("上个月的体检结果", "2023-09-01", "2023-10-01");
        is("三天前", "2023-10-21", "2023-10-22");
        is("两个月前买的书", "2023-08-01", "2023-09-01");
        is("5月3日的会议", "2023-05-03", "2023-05-04");
        is("十二月的计划", "2022-12-01", "2023-01-01");
        is("2022年3月", "2022-03-01", "2022-04-01");
        is("2021年我在做什么", "2021-01-01", "2022-01-01");
        is("八月十五号", "2023-08-15", "2023-08-16");
    }

    #[test]
    fn the_window_extends_by_the_telling_lag() {
        let w = window_of("what did I do on October 13, 2023?", now()).unwrap();
        // A day: a week of lag.
        assert_eq!(w.told_until().format("%Y-%m-%d").to_string(), "2023-10-21");
        assert!(w.holds(Utc.with_ymd_and_hms(2023, 10, 20, 23, 0, 0).unwrap()));
        assert!(!w.holds(Utc.with_ymd_and_hms(2023, 10, 21, 0, 0, 0).unwrap()));
        assert!(!w.holds(Utc.with_ymd_and_hms(2023, 10, 12, 23, 0, 0).unwrap()));
        // A year: a month of lag.
        let y = window_of("in 2022", now()).unwrap();
        assert_eq!(y.told_until().format("%Y-%m-%d").to_string(), "2023-02-01");
        let s = TemporalSignal::of(&y, Utc.with_ymd_and_hms(2022, 6, 1, 0, 0, 0).unwrap(), 0.5);
        assert!(s.in_window);
        assert_eq!(s.factor, 1.5);
        let s = TemporalSignal::of(&y, Utc.with_ymd_and_hms(2021, 6, 1, 0, 0, 0).unwrap(), 0.5);
        assert_eq!((s.in_window, s.factor), (false, 1.0));
    }

    #[test]
    fn odd_input_never_panics() {
        for q in [
            "February 30, 2023",
            "13月45日",
            "in 1900",
            "99 years ago",
            "999 months ago",
            "九十九年前",
            "0月0日",
            "",
        ] {
            let _ = window_of(q, now());
        }
        assert_eq!(span("February 30, 2023"), None);
        assert_eq!(span("13月45日"), None);
    }
}
