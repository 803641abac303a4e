//! The golden role × operation matrix of spec section 5.

use super::*;

fn who(name: &str) -> Standing {
    let user = Standing {
        user: true,
        ..Default::default()
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
            ..Default::default()
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
        (ReadRows, Chatroom, "YYYYY.Y"),
        (InsertRows, Department, "YY.YY.Y"),
        (EditRows, Company, "YYYYYY."),
        (ListColumns, Chatroom, ".Y.YY.Y"),
        (ListColumns, Department, "YY.YY.Y"),
        (CreateColumn, Chatroom, "YY..Y.."),
        (CreateColumn, Department, "YY.YY.Y"),
        (CreateColumn, Company, "Y...Y.."),
        (ManageColumns, Chatroom, "YY..Y.."),
        (ManageColumns, Department, "YY..Y.."),
        (ManageColumns, Company, "Y...Y.."),
        (ManageTable, Department, "YY..Y.."),
    ];
    for (op, kind, cells) in expected {
        assert_eq!(row(op, kind), cells, "{op:?} in {kind:?}");
    }
}
