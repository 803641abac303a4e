//! Schemas of request items whose Rust types live in the domain (which does not
//! depend on the document's library): what a client must send for the server to
//! read the item at all. The domain's own checks (the rules behind 400) stay in
//! the domain; these state the fields, their types and the id pattern.

use super::enums::{string_enum, tagged_variants};
use domain::tables::column::NAME_CHARS;
use domain::tables::rule::{MAX_RULES, RuleEvent};
use domain::tables::trigger::{Action, MAX_TRIGGERS, Schedule, TriggerEvent};
use utoipa::openapi::Array;
use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, Object, ObjectBuilder, Type};

/// A character that is not a control character.
const NO_CONTROL: &str = r"[^\x00-\x1f\x7f-\x9f]";
/// A character that is neither a space nor a control character.
const VISIBLE: &str = r"[^\s\x00-\x1f\x7f-\x9f]";

/// The pattern of client-chosen rule and trigger ids.
const CLIENT_ID_PATTERN: &str = "^[a-z0-9][a-z0-9_-]{0,63}$";

fn string() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::String)
}

fn object() -> ObjectBuilder {
    ObjectBuilder::new().schema_type(Type::Object)
}

fn array_of(items: Object, max: usize) -> Array {
    ArrayBuilder::new()
        .items(items)
        .max_items(Some(max))
        .build()
}

/// `[{id, label, type: require_approval, events, template_id}]`.
pub fn approval_rules() -> Array {
    let events = ArrayBuilder::new()
        .items(string_enum::<RuleEvent>())
        .min_items(Some(1))
        .build();
    let rule = object()
        .property("id", string().pattern(Some(CLIENT_ID_PATTERN)))
        .property("label", string().min_length(Some(1)))
        .property("type", string().enum_values(Some(["require_approval"])))
        .property("events", events)
        .property(
            "template_id",
            string().format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Uuid,
            ))),
        )
        .required("id")
        .required("label")
        .required("type")
        .required("events")
        .required("template_id")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build();
    array_of(rule, MAX_RULES)
}

/// `[{id, name, enabled?, on? | schedule?, when?, actions}]`.
pub fn triggers() -> Array {
    let trigger: Object = object()
        .property("id", string().pattern(Some(CLIENT_ID_PATTERN)))
        .property("name", string().min_length(Some(1)))
        .property("enabled", ObjectBuilder::new().schema_type(Type::Boolean))
        .property("on", string_enum::<TriggerEvent>())
        .property("schedule", tagged::<Schedule>())
        .property("when", object())
        .property(
            "actions",
            ArrayBuilder::new().items(tagged::<Action>()).build(),
        )
        .required("id")
        .required("name")
        .required("actions")
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .build();
    array_of(trigger, MAX_TRIGGERS)
}

/// A display name: at most `max` characters, at least one that is not a space,
/// no control characters.
fn display_name(max: usize) -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(max))
        .pattern(Some(format!("^{NO_CONTROL}*{VISIBLE}{NO_CONTROL}*$")))
        .build()
}

/// A table, token, review group or template name (1..200 characters).
pub fn name_200() -> Object {
    display_name(200)
}

/// A view name (1..100 characters).
pub fn name_100() -> Object {
    display_name(100)
}

/// `asc` or `desc`.
pub fn sort_order() -> Object {
    string().enum_values(Some(["asc", "desc"])).build()
}

/// An object of an internally tagged enum: its `type` names one of the variants.
fn tagged<T: serde::de::DeserializeOwned>() -> Object {
    let names = tagged_variants::<T>("type");
    assert!(
        !names.is_empty(),
        "{} is not tagged by type",
        std::any::type_name::<T>()
    );
    object()
        .property("type", string().enum_values(Some(names)))
        .required("type")
        .build()
}

/// A column's display name: 1..100 characters, no control characters, no spaces
/// around it (uniqueness and reserved names are the table's to check).
pub fn column_name() -> Object {
    string()
        .min_length(Some(1))
        .max_length(Some(NAME_CHARS))
        .pattern(Some(format!("^{VISIBLE}({NO_CONTROL}*{VISIBLE})?$")))
        .build()
}

/// The slot names of a secret approval: 1..100 names of `^[A-Za-z_][A-Za-z0-9_]{0,127}$`.
pub fn slot_names() -> Array {
    ArrayBuilder::new()
        .items(string().pattern(Some("^[A-Za-z_][A-Za-z0-9_]{0,127}$")))
        .min_items(Some(1))
        .max_items(Some(100))
        .build()
}

/// A boolean that must be `true` (an acknowledgement such as `risk_accepted`).
pub fn accepted() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Boolean)
        .enum_values(Some([true]))
        .build()
}
