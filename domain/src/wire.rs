//! The wire names of the domain's unit enums, and (feature `sqlx`) those enums as
//! PostgreSQL `text` columns.
//!
//! Every state, kind and scope enum serializes as its `snake_case` name; the read
//! models store that same name in `text` columns. With the `sqlx` feature each such
//! enum binds and decodes as `text` directly, so a read-model row holds
//! `RunStatus`, not a `String` to compare against literals. The feature implements
//! encoding traits only: the domain still performs no I/O.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The wire name of an enum that serializes as a string (`snake_case`).
pub fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        other => other.map(|v| v.to_string()).unwrap_or_default(),
    }
}

/// Parses a wire name back into its enum.
pub fn from_wire<T: DeserializeOwned>(name: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

/// Implements the `text` column traits for unit enums that serialize as strings.
#[cfg(feature = "sqlx")]
macro_rules! text_columns {
    ($($t:ty),* $(,)?) => {$(
        impl sqlx::Type<sqlx::Postgres> for $t {
            fn type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::Type<sqlx::Postgres>>::type_info()
            }
            fn compatible(ty: &sqlx::postgres::PgTypeInfo) -> bool {
                <&str as sqlx::Type<sqlx::Postgres>>::compatible(ty)
            }
        }

        impl sqlx::postgres::PgHasArrayType for $t {
            fn array_type_info() -> sqlx::postgres::PgTypeInfo {
                <&str as sqlx::postgres::PgHasArrayType>::array_type_info()
            }
        }

        impl<'q> sqlx::Encode<'q, sqlx::Postgres> for $t {
            fn encode_by_ref(
                &self,
                buf: &mut sqlx::postgres::PgArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<sqlx::Postgres>>::encode(wire(self), buf)
            }
        }

        impl<'r> sqlx::Decode<'r, sqlx::Postgres> for $t {
            fn decode(value: sqlx::postgres::PgValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                let name = <&str as sqlx::Decode<sqlx::Postgres>>::decode(value)?;
                from_wire(name).ok_or_else(|| {
                    format!("'{name}' is not a {}", stringify!($t)).into()
                })
            }
        }
    )*};
}

#[cfg(feature = "sqlx")]
text_columns!(
    crate::agent::proposal::ProposalState,
    crate::catalog::ResourceProfile,
    crate::environments::archive::ArchiveFormat,
    crate::environments::environment::Lifecycle,
    crate::environments::environment::OwnerKind,
    crate::environments::environment::OwnerScope,
    crate::environments::upload::UploadState,
    crate::environments::version::BuildPhase,
    crate::environments::version::BuildProfile,
    crate::environments::version::BuildStatus,
    crate::environments::version::SecurityState,
    crate::environments::version::TerminalClass,
    crate::environments::version::VersionState,
    crate::objects::DeletionState,
    crate::objects::ObjectKind,
    crate::principal::ApiKeyScope,
    crate::principal::AuthMethod,
    crate::principal::PrincipalType,
    crate::runs::link::LinkedObject,
    crate::runs::run::ContentState,
    crate::runs::run::RunStatus,
    crate::runs::run::SubmissionSource,
    crate::runs::run::TerminalClass,
    crate::sharing::binding::BindingState,
    crate::sharing::share::ShareState,
    crate::sharing::share::ShareTargetKind,
    crate::tables::scope::ScopeKind,
    crate::tasks::version::ContentState,
    crate::tasks::version::TaskVersionState,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::run::RunStatus;

    #[test]
    fn wire_names_round_trip() {
        assert_eq!(wire(&RunStatus::CancelRequested), "cancel_requested");
        assert_eq!(
            from_wire::<RunStatus>("cancel_requested"),
            Some(RunStatus::CancelRequested)
        );
        assert_eq!(from_wire::<RunStatus>("nope"), None);
    }
}
