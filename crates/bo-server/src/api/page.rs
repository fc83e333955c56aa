//! Paging of list methods: `pageSize` (at most 1,000; absent, 100, or what the method says) and
//! an opaque `pageToken` that resumes after the last id of the previous page.

use std::collections::BTreeMap;

use serde::Deserialize;
use utoipa::IntoParams;

use super::error::ApiError;

const DEFAULT_PAGE_SIZE: i64 = 100;
const MAX_PAGE_SIZE: i64 = 1000;
const TOKEN_PREFIX: &str = "after-";

/// The paging query of a list method.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct PageParams {
    /// Items per page: 1 to 1,000; 0 or absent means 100.
    #[param(minimum = 0, maximum = 1000)]
    pub page_size: Option<i32>,
    /// `nextPageToken` of the previous page.
    #[param(pattern = r"^(after-[0-9]{1,18})?$")]
    pub page_token: Option<String>,
}

/// The paging query of ListTrials, whose default is every trial.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct TrialPageParams {
    /// Trials per page: 1 to 1,000; 0 or absent means every trial, up to 10,000 (and 32 MiB of
    /// stored trials) a page.
    #[param(minimum = 0, maximum = 1000)]
    pub page_size: Option<i32>,
    /// `nextPageToken` of the previous page.
    #[param(pattern = r"^(after-[0-9]{1,18})?$")]
    pub page_token: Option<String>,
}

/// A validated page request.
pub struct Page {
    /// Resume after this id.
    pub after_id: i64,
    /// Items wanted.
    pub size: i64,
    /// Whether the client asked for a size (a `pageSize` above 0).
    pub sized: bool,
}

impl Page {
    /// Reads `pageSize` and `pageToken` (snake_case accepted) from a query; 0 or absent means
    /// 100.
    pub fn from_query(query: &BTreeMap<String, String>) -> Result<Page, ApiError> {
        Page::from_query_or(query, DEFAULT_PAGE_SIZE)
    }

    /// As [`Page::from_query`], with `default` items when `pageSize` is 0 or absent.
    pub fn from_query_or(query: &BTreeMap<String, String>, default: i64) -> Result<Page, ApiError> {
        let get = |camel: &str, snake: &str| query.get(camel).or_else(|| query.get(snake));
        let (size, sized) = match get("pageSize", "page_size") {
            None => (default, false),
            Some(raw) => match raw.parse::<i64>() {
                Ok(0) => (default, false),
                Ok(n) if (1..=MAX_PAGE_SIZE).contains(&n) => (n, true),
                _ => return Err(ApiError::invalid(format!("pageSize: must be 0 to {MAX_PAGE_SIZE}, got {raw:?}"))),
            },
        };
        let after_id = match get("pageToken", "page_token").filter(|t| !t.is_empty()) {
            None => 0,
            Some(token) => token
                .strip_prefix(TOKEN_PREFIX)
                .and_then(|n| n.parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| ApiError::invalid(format!("pageToken: {token:?} is not a token this service issued")))?,
        };
        Ok(Page { after_id, size, sized })
    }

    /// The token of the page that starts after `id`.
    pub fn token_after(&self, id: i64) -> String {
        format!("{TOKEN_PREFIX}{id}")
    }

    /// As [`Page::next_token`], for a page the store may have cut short by its byte budget
    /// (`cut`): then the next page starts after its last item.
    pub fn next_token_or_cut<T>(&self, items: &mut Vec<T>, cut: bool, id: impl Fn(&T) -> i64) -> String {
        match items.last() {
            Some(last) if cut => self.token_after(id(last)),
            _ => self.next_token(items, id),
        }
    }

    /// Given up to `size + 1` items, keeps `size` and returns the token for the rest ("" when
    /// this is the last page).
    pub fn next_token<T>(&self, items: &mut Vec<T>, id: impl Fn(&T) -> i64) -> String {
        if items.len() as i64 > self.size {
            items.truncate(self.size as usize);
            items.last().map(|last| format!("{TOKEN_PREFIX}{}", id(last))).unwrap_or_default()
        } else {
            String::new()
        }
    }
}
