//! The notification center (spec section 6; [docs/notifications.md]): a user's
//! `sandbox_event` notifications, derived from the log by the `notifications`
//! projection. `GET /private/module/notifications` lists them (cursor, `unread`
//! filter), `.../unread-count` counts the unread, `POST .../read` marks some or all
//! read (events of the user's inbox), and `GET .../stream` pushes new ones as
//! Server-Sent Events. Users only (403 for social media clients); the status GETs
//! stay the truth.

use crate::access::INSUFFICIENT;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PageQuery, list_response};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use chrono::{DateTime, Utc};
use domain::notifications::{InboxCommand, MAX_MARKED, NotificationInbox};
use domain::principal::PrincipalType;
use futures::Stream;
use projections::read_models::notifications::query::{self as center, NotificationRow, Reader};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::convert::Infallible;
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// How often the stream looks for new notifications.
const STREAM_POLL: Duration = Duration::from_secs(1);

/// The notification routes (absolute paths; the caller adds authentication).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_notifications))
        .routes(routes!(unread_count))
        .routes(routes!(mark_read))
        .routes(routes!(stream))
}

/// A notification.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationResponse {
    /// The notification.
    pub id: Uuid,
    /// Always `sandbox_event`.
    #[serde(rename = "type")]
    pub notification_type: String,
    /// The `SandboxNotificationEvent` kind (`build_ready`, `run_terminal`, ...).
    pub event: String,
    /// Its facts (ids to fetch the object by; the status GETs are the truth).
    #[schema(value_type = Object)]
    pub payload: Value,
    /// When it was raised.
    pub created_at: DateTime<Utc>,
    /// Whether the caller read it.
    pub read: bool,
}

impl From<NotificationRow> for NotificationResponse {
    fn from(r: NotificationRow) -> Self {
        Self {
            id: r.id,
            notification_type: "sandbox_event".into(),
            event: r.kind,
            payload: r.payload,
            created_at: r.created_at,
            read: r.read,
        }
    }
}

list_response!(
    /// A page of notifications, newest first.
    NotificationListResponse of NotificationResponse
);

/// The list's query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationQuery {
    /// Only unread ones.
    pub unread: Option<bool>,
    /// Items per page, 1..100 (default 50).
    pub page_size: Option<i64>,
    /// Opaque cursor from a previous page's `next_page_token`.
    pub page_token: Option<String>,
}

/// The unread count.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnreadCount {
    /// Notifications the caller has not read.
    pub unread: i64,
}

/// What to mark read: some ids, or everything raised so far.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkRead {
    /// 1..100 notifications of the caller.
    pub ids: Option<Vec<Uuid>>,
    /// Every notification raised until now.
    #[serde(default)]
    pub all: bool,
}

/// `{ids: [1..100 ids], all?: false}` or `{all: true}`: one of the two forms.
impl utoipa::PartialSchema for MarkRead {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{
            AdditionalProperties, ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder,
            SchemaFormat, Type,
        };
        let closed = || AdditionalProperties::FreeForm(false);
        let ids = ArrayBuilder::new()
            .items(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
            )
            .min_items(Some(1))
            .max_items(Some(MAX_MARKED))
            .unique_items(true);
        let some = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("ids", ids)
            .property(
                "all",
                ObjectBuilder::new()
                    .schema_type(Type::Boolean)
                    .enum_values(Some([false])),
            )
            .required("ids")
            .additional_properties(Some(closed()));
        let every = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property(
                "all",
                ObjectBuilder::new()
                    .schema_type(Type::Boolean)
                    .enum_values(Some([true])),
            )
            .required("all")
            .additional_properties(Some(closed()));
        OneOfBuilder::new().item(some).item(every).into()
    }
}

impl ToSchema for MarkRead {}

/// The caller as a reader: users only.
fn reader(caller: &Caller) -> ApiResult<Reader> {
    if caller.principal.principal_type != PrincipalType::User {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    Ok(Reader {
        company_id: caller.principal.company_id,
        user_id: caller.principal.principal_id,
        manager: caller.principal.is_company_manager(),
    })
}

/// The caller's notifications, newest first.
#[utoipa::path(get, path = "/private/module/notifications", tag = "notifications",
    params(NotificationQuery),
    responses((status = 200, body = NotificationListResponse)))]
async fn list_notifications(
    caller: Caller,
    ApiQuery(query): ApiQuery<NotificationQuery>,
) -> ApiResult<Json<NotificationListResponse>> {
    let reader = reader(&caller)?;
    let unread = query.unread.unwrap_or(false);
    let page = PageQuery {
        page_size: query.page_size,
        page_token: query.page_token,
    }
    .page::<(DateTime<Utc>, Uuid)>(50)?;
    let pool = caller.pool();
    let listed = page
        .fetch(
            async |w| center::page(pool, reader, unread, w.after, w.limit).await,
            |r| (r.created_at, r.id),
        )
        .await?;
    Ok(Json(listed.into()))
}

/// How many of the caller's notifications are unread.
#[utoipa::path(get, path = "/private/module/notifications/unread-count", tag = "notifications",
    responses((status = 200, body = UnreadCount)))]
async fn unread_count(caller: Caller) -> ApiResult<Json<UnreadCount>> {
    let reader = reader(&caller)?;
    let unread = center::unread_count(caller.pool(), reader).await?;
    Ok(Json(UnreadCount { unread }))
}

/// Marks notifications read: `{ids}` (ids not addressed to the caller are 404) or
/// `{all: true}`; answers the unread count after.
#[utoipa::path(post, path = "/private/module/notifications/read", tag = "notifications",
    request_body = MarkRead,
    responses((status = 200, body = UnreadCount)))]
async fn mark_read(
    caller: Caller,
    ApiJson(body): ApiJson<MarkRead>,
) -> ApiResult<Json<UnreadCount>> {
    let reader = reader(&caller)?;
    let command = match (body.ids, body.all) {
        (None, true) => InboxCommand::MarkAllRead {
            user_id: reader.user_id,
            until: Utc::now(),
            up_to_position: center::newest_position(caller.pool(), reader).await?,
        },
        (Some(ids), false) => {
            let known = center::addressed(caller.pool(), reader, &ids).await?;
            if ids.iter().any(|id| !known.contains(id)) {
                return Err(ApiError::NotFound);
            }
            InboxCommand::MarkRead {
                user_id: reader.user_id,
                ids,
            }
        }
        _ => {
            return Err(ApiError::code(
                domain::error::Code::InvalidBody,
                "send either ids or all: true",
            ));
        }
    };
    caller
        .command::<NotificationInbox>(reader.user_id, command)
        .await?;
    let unread = center::unread_count(caller.pool(), reader).await?;
    Ok(Json(UnreadCount { unread }))
}

/// New notifications of the caller as Server-Sent Events (`event: notification`,
/// data a notification, id its log position): from after `Last-Event-ID` when
/// sent, else from after the newest one that exists now, in log order. A comment
/// keeps the connection alive.
#[utoipa::path(get, path = "/private/module/notifications/stream", tag = "notifications",
    responses((status = 200, description = "text/event-stream of notifications", content_type = "text/event-stream")))]
async fn stream(
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let reader = reader(&caller)?;
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<i64>().ok());
    let cursor = match resumed {
        Some(position) => position,
        None => center::newest_position(caller.pool(), reader).await?,
    };
    let state = caller.state.clone();
    let events = futures::stream::unfold((state, cursor), move |(state, mut cursor)| async move {
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => return None,
                _ = tokio::time::sleep(STREAM_POLL) => {}
            }
            let rows = match center::after(&state.pool, reader, cursor, 100).await {
                Ok(rows) => rows,
                Err(error) => {
                    tracing::warn!(%error, "notification stream query failed");
                    continue;
                }
            };
            let Some(last) = rows.last() else { continue };
            cursor = last.position;
            let events: Vec<Result<Event, Infallible>> = rows
                .into_iter()
                .map(|row| {
                    let id = row.position.to_string();
                    let data =
                        serde_json::to_string(&NotificationResponse::from(row)).unwrap_or_default();
                    Ok(Event::default().event("notification").id(id).data(data))
                })
                .collect();
            return Some((futures::stream::iter(events), (state, cursor)));
        }
    });
    Ok(Sse::new(futures::StreamExt::flatten(events)).keep_alive(KeepAlive::default()))
}
