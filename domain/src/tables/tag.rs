//! The TableTag aggregate: a named, coloured label of a scope that its tables carry
//! (`POST {scope_mount}/table-tags`, `POST .../table-tags/{tag_id}/tables/{table_id}`;
//! spec `custom-tables.md` section 2). A Command's `tag_id` names a tag of its
//! table's scope. A deployment's system tag is a tag with a `system`: the tables a
//! document holds carry it.

use super::TableError;
use super::deployment::is_system_name;
use super::scope::ScopeRef;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Characters of a tag name at most.
pub const MAX_TAG_NAME: usize = 100;

/// A tag as created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TagTerms {
    /// The tag.
    pub tag_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The scope it labels tables of.
    pub scope: ScopeRef,
    /// Name, unique in the scope (checked by the route).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `#rrggbb`.
    pub color: Option<String>,
    /// The deployment system whose tag it is (none for a tag made by REST).
    #[serde(default)]
    pub system: Option<String>,
    /// Who created it.
    pub created_by: String,
}

impl TagTerms {
    /// The terms checked: a trimmed name of 1..[`MAX_TAG_NAME`] characters, a
    /// description of at most 2000, a colour `#rrggbb`, a valid system name.
    pub fn check(mut self) -> Result<Self, TableError> {
        self.name = self.name.trim().to_string();
        if self.name.is_empty()
            || self.name.chars().count() > MAX_TAG_NAME
            || self.name.chars().any(char::is_control)
        {
            return Err(TableError::TableConfig(format!(
                "tag name must be 1..{MAX_TAG_NAME} characters"
            )));
        }
        if self
            .description
            .as_ref()
            .is_some_and(|d| d.chars().count() > 2000)
        {
            return Err(TableError::TableConfig(
                "tag description must be at most 2000 characters".into(),
            ));
        }
        if let Some(color) = &self.color {
            let hex = color.strip_prefix('#').unwrap_or("");
            if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(TableError::TableConfig("color must be #rrggbb".into()));
            }
            self.color = Some(color.to_ascii_lowercase());
        }
        if self.system.as_deref().is_some_and(|s| !is_system_name(s)) {
            return Err(TableError::TableConfig(
                "system must match ^[a-z0-9][a-z0-9_-]{0,63}$".into(),
            ));
        }
        Ok(self)
    }
}

/// Commands of [`TableTag`].
#[derive(Debug, Clone, PartialEq)]
pub enum TagCommand {
    /// Creates it (nothing happens when it exists).
    Create(Box<TagTerms>),
    /// Changes its name, description or colour.
    Update {
        /// New name.
        name: String,
        /// New description.
        description: Option<String>,
        /// New colour.
        color: Option<String>,
    },
    /// A table of its scope carries it (nothing happens when it does).
    Attach {
        /// The table.
        table_id: Uuid,
    },
    /// A table no longer carries it.
    Detach {
        /// The table.
        table_id: Uuid,
    },
}

/// Events of [`TableTag`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum TagEvent {
    /// A tag exists.
    TagCreated(Box<TagTerms>),
    /// Its name, description or colour changed.
    TagUpdated {
        /// The tag.
        tag_id: Uuid,
        /// Name.
        name: String,
        /// Description.
        description: Option<String>,
        /// Colour.
        color: Option<String>,
    },
    /// A table carries it.
    TagAttached {
        /// The tag.
        tag_id: Uuid,
        /// The table.
        table_id: Uuid,
    },
    /// A table no longer carries it.
    TagDetached {
        /// The tag.
        tag_id: Uuid,
        /// The table.
        table_id: Uuid,
    },
}

impl cqrs_es::DomainEvent for TagEvent {
    fn event_type(&self) -> String {
        match self {
            Self::TagCreated(_) => "TagCreated",
            Self::TagUpdated { .. } => "TagUpdated",
            Self::TagAttached { .. } => "TagAttached",
            Self::TagDetached { .. } => "TagDetached",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A tag and the tables carrying it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableTag {
    /// What it was created with (name, description and colour as changed since).
    pub terms: Option<Box<TagTerms>>,
    /// The tables carrying it, in the order they got it.
    pub tables: Vec<Uuid>,
}

impl cqrs_es::Aggregate for TableTag {
    const TYPE: &'static str = "custom_table_tag";
    type Command = TagCommand;
    type Event = TagEvent;
    type Error = TableError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &cqrs_es::event_sink::EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let events = match (command, &self.terms) {
            (TagCommand::Create(terms), None) => {
                vec![TagEvent::TagCreated(Box::new(terms.check()?))]
            }
            (TagCommand::Create(_), Some(_)) => vec![],
            (_, None) => return Err(TableError::NotFound("tag")),
            (
                TagCommand::Update {
                    name,
                    description,
                    color,
                },
                Some(terms),
            ) => {
                let checked = TagTerms {
                    name,
                    description,
                    color,
                    ..(**terms).clone()
                }
                .check()?;
                if checked == **terms {
                    vec![]
                } else {
                    vec![TagEvent::TagUpdated {
                        tag_id: terms.tag_id,
                        name: checked.name,
                        description: checked.description,
                        color: checked.color,
                    }]
                }
            }
            (TagCommand::Attach { table_id }, Some(terms)) => {
                if self.tables.contains(&table_id) {
                    vec![]
                } else {
                    vec![TagEvent::TagAttached {
                        tag_id: terms.tag_id,
                        table_id,
                    }]
                }
            }
            (TagCommand::Detach { table_id }, Some(terms)) => {
                if self.tables.contains(&table_id) {
                    vec![TagEvent::TagDetached {
                        tag_id: terms.tag_id,
                        table_id,
                    }]
                } else {
                    vec![]
                }
            }
        };
        for event in events {
            sink.write(event, self).await;
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            TagEvent::TagCreated(terms) => self.terms = Some(terms),
            TagEvent::TagUpdated {
                name,
                description,
                color,
                ..
            } => {
                if let Some(terms) = self.terms.as_mut() {
                    terms.name = name;
                    terms.description = description;
                    terms.color = color;
                }
            }
            TagEvent::TagAttached { table_id, .. } => self.tables.push(table_id),
            TagEvent::TagDetached { table_id, .. } => self.tables.retain(|t| *t != table_id),
        }
    }
}

impl crate::AggregateExt for TableTag {}
