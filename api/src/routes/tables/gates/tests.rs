//! The golden role × operation matrix of spec section 5.

use super::*;

fn who(name: &str) -> Standing {
    // Every person here holds a grant that reads, inserts and edits: the table-level
    // gates follow the ladder alone (see `table_gates_follow_the_ladder`).
    let granted = Standing {
        read: true,
        insert: true,
        edit: true,
        ..Default::default()
    };
    let user = Standing {
        user: true,
        ..granted
    };
    match name {
        "company_manager" => Standing {
            company_manager: true,
            ..user
        },
        "scope_manager" => Standing {
            manager: true,
            member: true,
            ..user
        },
        "room_dept_manager" => Standing {
            room_department_manager: true,
            ..user
        },
        "member" => Standing {
            member: true,
            ..user
        },
        "creator" => Standing {
            member: true,
            table_creator: true,
            ..user
        },
        "company_user" => user,
        "social_client_member" => Standing {
            member: true,
            ..granted
        },
        _ => unreachable!(),
    }
}

const PEOPLE: [&str; 7] = [
    "company_manager",
    "scope_manager",
    "room_dept_manager",
    "member",
    "creator",
    "company_user",
    "social_client_member",
];

fn row(op: Operation, kind: ScopeKind) -> String {
    PEOPLE
        .iter()
        .map(|p| if allows(op, kind, &who(p)) { "Y" } else { "." })
        .collect()
}

#[test]
fn golden_matrix() {
    use Operation::*;
    use ScopeKind::*;
    // Columns: company_manager, scope_manager, room_dept_manager, member, creator,
    // company_user, social_client_member.
    let expected = [
        (ListOrCreateTables, Chatroom, "YYYYY.Y"),
        (ListOrCreateTables, Department, "YY.YY.Y"),
        (ListOrCreateTables, Company, "YYYYYY."),
        (ReadRows, Chatroom, "YYYYYYY"),
        (InsertRows, Department, "YYYYYYY"),
        (EditRows, Company, "YYYYYYY"),
        (ListColumns, Chatroom, ".Y.YY.Y"),
        (ListColumns, Department, "YY.YY.Y"),
        (CreateColumn, Chatroom, "YY..Y.."),
        (CreateColumn, Department, "YY.YY.Y"),
        (CreateColumn, Company, "Y...Y.."),
        (ManageColumns, Chatroom, "YY..Y.."),
        (ManageColumns, Department, "YY..Y.."),
        (ManageColumns, Company, "Y...Y.."),
        (ManageTable, Department, "YY..Y.."),
        (PublishTokens, Chatroom, "YY..Y.."),
        (PublishTokens, Department, "YY..Y.."),
        (PublishTokens, Company, "Y...Y.."),
        (WriteBlobs, Chatroom, "YYYYYYY"),
        (ManageScope, Chatroom, "YY....."),
        (ManageScope, Department, "YY....."),
        (ManageScope, Company, "Y......"),
    ];
    for (op, kind, cells) in expected {
        assert_eq!(row(op, kind), cells, "{op:?} in {kind:?}");
    }
}

#[test]
fn table_gates_follow_the_ladder() {
    let manager = Standing {
        user: true,
        company_manager: true,
        ..Default::default()
    };
    for (op, flag) in [
        (Operation::ReadRows, "read"),
        (Operation::InsertRows, "insert"),
        (Operation::EditRows, "edit"),
    ] {
        assert!(
            !allows(op, ScopeKind::Company, &manager),
            "{op:?} without {flag}"
        );
    }
    let reader = Standing {
        read: true,
        ..manager
    };
    assert!(allows(Operation::ReadRows, ScopeKind::Company, &reader));
    assert!(!allows(Operation::InsertRows, ScopeKind::Company, &reader));
    assert!(!allows(Operation::WriteBlobs, ScopeKind::Company, &reader));
    for writer in [
        Standing {
            insert: true,
            ..manager
        },
        Standing {
            edit: true,
            ..manager
        },
    ] {
        assert!(allows(Operation::WriteBlobs, ScopeKind::Company, &writer));
    }
}
