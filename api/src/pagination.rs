//! Cursor pagination shared by every list route: `page_size` 1..100 and an opaque
//! `page_token` of at most 512 characters that carries a keyset cursor.
//!
//! The token is URL-safe base64 of the cursor's JSON. It is opaque to clients, not
//! secret: every list query applies the caller's authorization on its own, so a forged
//! cursor only moves the starting point inside rows the caller may see anyway.

use crate::error::ApiError;
use crate::extract::storable;
use crate::openapi::enums::LifecycleNames;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::validation::ViolationKind;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

/// Largest `page_size`.
pub const MAX_PAGE_SIZE: i64 = 100;
/// Longest `page_token`.
pub const MAX_TOKEN_CHARS: usize = 512;

/// The pagination query parameters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1..100.
    pub page_size: Option<i64>,
    /// Opaque cursor from a previous page's `next_page_token`.
    pub page_token: Option<String>,
}

pub use projections::read_models::page::{LifecycleFilter, Window};

/// Pagination and lifecycle query parameters of list routes.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LifecycleQuery {
    /// Items per page, 1..100.
    pub page_size: Option<i64>,
    /// Opaque cursor from a previous page's `next_page_token`.
    pub page_token: Option<String>,
    /// `active` (default), `retired` or `all`.
    #[param(value_type = Option<LifecycleNames>, inline)]
    pub lifecycle: Option<LifecycleFilter>,
}

impl LifecycleQuery {
    /// The page part.
    pub fn page<C: DeserializeOwned>(&self, default_size: i64) -> Result<Page<C>, ApiError> {
        PageQuery {
            page_size: self.page_size,
            page_token: self.page_token.clone(),
        }
        .page(default_size)
    }
}

/// A validated page request.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<C> {
    /// Items to return.
    pub size: i64,
    /// Where to start; `None` for the first page.
    pub after: Option<C>,
}

impl<C> Page<C> {
    /// The query window: the page plus one row, which tells whether another page
    /// follows (see [`finish`]).
    pub fn window(self) -> Window<C> {
        Window {
            after: self.after,
            limit: self.size + 1,
        }
    }
}

impl<C: Serialize> Page<C> {
    /// Reads this page: `fetch` runs the read model's query over the window, and
    /// `cursor` says where a row stands (the next page token is the last row's).
    pub async fn fetch<R>(
        self,
        fetch: impl AsyncFnOnce(Window<C>) -> sqlx::Result<Vec<R>>,
        cursor: impl Fn(&R) -> C,
    ) -> Result<Listed<R>, ApiError> {
        let size = self.size;
        let rows = fetch(self.window()).await?;
        let (items, next_page_token) = finish(rows, size, cursor);
        Ok(Listed {
            items,
            next_page_token,
        })
    }
}

/// One page of a list: its items and the token of the next page (`None` on the
/// last). Every list response converts from it (see [`list_response`]).
#[derive(Debug)]
pub struct Listed<T> {
    /// The page's items.
    pub items: Vec<T>,
    /// Cursor of the next page.
    pub next_page_token: Option<String>,
}

impl<T> Listed<T> {
    /// The same page with every item turned into something else.
    pub fn map<V>(self, item: impl FnMut(T) -> V) -> Listed<V> {
        Listed {
            items: self.items.into_iter().map(item).collect(),
            next_page_token: self.next_page_token,
        }
    }
}

/// Declares a list response of the specs' shape, `{items, next_page_token}`, that
/// converts from a [`Listed`] page of anything that converts into its item.
macro_rules! list_response {
    ($(#[$doc:meta])* $name:ident of $item:ty) => {
        $(#[$doc])*
        #[derive(Debug, serde::Serialize, utoipa::ToSchema)]
        pub struct $name {
            /// The page.
            pub items: Vec<$item>,
            /// Cursor of the next page (`null` on the last page).
            pub next_page_token: Option<String>,
        }

        impl<T: Into<$item>> From<$crate::pagination::Listed<T>> for $name {
            fn from(page: $crate::pagination::Listed<T>) -> Self {
                Self {
                    items: page.items.into_iter().map(Into::into).collect(),
                    next_page_token: page.next_page_token,
                }
            }
        }
    };
}
pub(crate) use list_response;

impl PageQuery {
    /// Validates the parameters, using `default_size` when none is given.
    pub fn page<C: DeserializeOwned>(&self, default_size: i64) -> Result<Page<C>, ApiError> {
        let size = self.page_size.unwrap_or(default_size);
        if size < 1 {
            return Err(ApiError::invalid(
                &["query", "page_size"],
                ViolationKind::GreaterThanEqual(1),
                Some(size.into()),
            ));
        }
        if size > MAX_PAGE_SIZE {
            return Err(ApiError::invalid(
                &["query", "page_size"],
                ViolationKind::LessThanEqual(MAX_PAGE_SIZE),
                Some(size.into()),
            ));
        }
        let after = match self.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => None,
            Some(token) => Some(decode_token(token)?),
        };
        Ok(Page { size, after })
    }
}

/// Most rows a management list returns (spec: "Management lists cap at 2000 rows and
/// return a `truncated` flag"); queries read one more to tell.
pub const MANAGEMENT_LIST_CAP: i64 = 2000;

/// The first [`MANAGEMENT_LIST_CAP`] rows the caller may see, and whether the query
/// had more than the cap (rows read with a limit of the cap plus one).
pub fn capped<R, T: From<R>>(rows: Vec<R>, keep: impl Fn(&R) -> bool) -> (Vec<T>, bool) {
    let truncated = rows.len() as i64 > MANAGEMENT_LIST_CAP;
    let items = rows
        .into_iter()
        .take(MANAGEMENT_LIST_CAP as usize)
        .filter(|row| keep(row))
        .map(Into::into)
        .collect();
    (items, truncated)
}

/// Encodes a cursor as a page token.
pub fn encode_token<C: Serialize>(cursor: &C) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).expect("cursors serialize"))
}

fn decode_token<C: DeserializeOwned>(token: &str) -> Result<C, ApiError> {
    let invalid = |message: &str| {
        ApiError::invalid(
            &["query", "page_token"],
            ViolationKind::Rule {
                kind: "value_error",
                message: message.to_string(),
            },
            None,
        )
    };
    if token.chars().count() > MAX_TOKEN_CHARS {
        return Err(ApiError::invalid(
            &["query", "page_token"],
            ViolationKind::TooLong(MAX_TOKEN_CHARS),
            None,
        ));
    }
    let foreign = || invalid("page_token is not a token this service issued");
    let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| foreign())?;
    let document: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| foreign())?;
    // A value PostgreSQL cannot take was not issued here (the query would fail).
    if unstorable(&document) {
        return Err(foreign());
    }
    serde_json::from_value(document).map_err(|_| foreign())
}

/// Whether a cursor holds a value PostgreSQL refuses (see [`storable`]).
fn unstorable(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::String(text) => !storable(text),
        serde_json::Value::Array(items) => items.iter().any(unstorable),
        serde_json::Value::Object(fields) => fields.values().any(unstorable),
        _ => false,
    }
}

/// Splits one extra row off a `size + 1` fetch and makes the next token from the last
/// row kept.
pub fn finish<T, C: Serialize>(
    mut rows: Vec<T>,
    size: i64,
    cursor_of: impl Fn(&T) -> C,
) -> (Vec<T>, Option<String>) {
    if rows.len() as i64 > size {
        rows.truncate(size as usize);
        let token = rows.last().map(|row| encode_token(&cursor_of(row)));
        (rows, token)
    } else {
        (rows, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_bounds_and_default() {
        let q = |size: Option<i64>| PageQuery {
            page_size: size,
            page_token: None,
        };
        assert_eq!(q(None).page::<i64>(50).unwrap().size, 50);
        assert!(q(Some(0)).page::<i64>(50).is_err());
        assert!(q(Some(101)).page::<i64>(50).is_err());
        assert_eq!(q(Some(100)).page::<i64>(50).unwrap().size, 100);
    }

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        let token = encode_token(&("2026-01-01", 7));
        let page = PageQuery {
            page_size: None,
            page_token: Some(token),
        }
        .page::<(String, i64)>(20)
        .unwrap();
        assert_eq!(page.after, Some(("2026-01-01".to_string(), 7)));
        assert!(
            PageQuery {
                page_size: None,
                page_token: Some("!!".into())
            }
            .page::<i64>(20)
            .is_err()
        );
        assert!(
            PageQuery {
                page_size: None,
                page_token: Some("a".repeat(513))
            }
            .page::<i64>(20)
            .is_err()
        );
    }

    #[test]
    fn finish_emits_a_token_only_when_more_rows_exist() {
        let (rows, token) = finish(vec![1, 2, 3], 2, |r| *r);
        assert_eq!(rows, vec![1, 2]);
        assert_eq!(token, Some(encode_token(&2)));
        let (rows, token) = finish(vec![1, 2], 2, |r| *r);
        assert_eq!((rows.len(), token), (2, None));
    }
}
