//! The formula grammar, parsed with winnow. The limits are checked before parsing
//! (length and nesting), so the recursive descent never goes deeper than
//! [`MAX_NESTING`] groups.

use super::{BinOp, Expr, MAX_CHARS, MAX_NESTING, MAX_REFS};
use winnow::Result;
use winnow::ascii::{Caseless, digit1, multispace0};
use winnow::combinator::{alt, delimited, opt, preceded, repeat, separated, terminated};
use winnow::prelude::*;
use winnow::token::{none_of, one_of, take_till};

/// Parses an expression into a tree whose column references are unresolved.
pub fn parse(expression: &str) -> std::result::Result<Expr, String> {
    let chars = expression.chars().count();
    if chars > MAX_CHARS {
        return Err(format!(
            "formula: the expression has {chars} characters; at most {MAX_CHARS} are allowed"
        ));
    }
    if expression.trim().is_empty() {
        return Err("formula: expression is required".into());
    }
    let depth = nesting(expression);
    if depth > MAX_NESTING {
        return Err(format!(
            "formula: the expression nests {depth} levels; at most {MAX_NESTING} are allowed"
        ));
    }
    let expr = delimited(multispace0, expr, multispace0)
        .parse(expression)
        .map_err(|e| {
            let at = expression[..e.offset()].chars().count() + 1;
            format!("formula: syntax error at character {at}")
        })?;
    let refs = count_refs(&expr);
    if refs > MAX_REFS {
        return Err(format!(
            "formula: the expression references columns {refs} times; at most {MAX_REFS} are allowed"
        ));
    }
    Ok(expr)
}

/// The deepest nesting of parentheses outside strings and column references.
fn nesting(expression: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut in_ref, mut escaped) = (false, false, false);
    for c in expression.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if in_ref {
            in_ref = c != ']';
        } else {
            match c {
                '"' => in_string = true,
                '[' => in_ref = true,
                '(' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                ')' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    deepest
}

fn count_refs(expr: &Expr) -> usize {
    match expr {
        Expr::Ref(_) => 1,
        Expr::Neg(e) => count_refs(e),
        Expr::Binary { left, right, .. } => count_refs(left) + count_refs(right),
        Expr::If(a, b, c) => count_refs(a) + count_refs(b) + count_refs(c),
        Expr::And(items) | Expr::Or(items) => items.iter().map(count_refs).sum(),
        _ => 0,
    }
}

fn expr(i: &mut &str) -> Result<Expr> {
    let left = additive.parse_next(i)?;
    let right =
        opt((delimited(multispace0, comparison_op, multispace0), additive)).parse_next(i)?;
    Ok(match right {
        Some((op, right)) => binary(op, left, right),
        None => left,
    })
}

fn comparison_op(i: &mut &str) -> Result<BinOp> {
    alt((
        "<=".value(BinOp::Lte),
        ">=".value(BinOp::Gte),
        "==".value(BinOp::Eq),
        "!=".value(BinOp::Neq),
        "<".value(BinOp::Lt),
        ">".value(BinOp::Gt),
    ))
    .parse_next(i)
}

fn binary(op: BinOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

/// A left-associative chain of `operand (op operand)*`.
fn chain(
    i: &mut &str,
    operand: fn(&mut &str) -> Result<Expr>,
    ops: [(char, BinOp); 2],
) -> Result<Expr> {
    let first = operand(i)?;
    let symbols = [ops[0].0, ops[1].0];
    let rest: Vec<(char, Expr)> = repeat(
        0..,
        (
            delimited(multispace0, one_of(symbols), multispace0),
            operand,
        ),
    )
    .parse_next(i)?;
    Ok(rest.into_iter().fold(first, |left, (symbol, right)| {
        let op = if symbol == ops[0].0 {
            ops[0].1
        } else {
            ops[1].1
        };
        binary(op, left, right)
    }))
}

fn additive(i: &mut &str) -> Result<Expr> {
    chain(i, term, [('+', BinOp::Add), ('-', BinOp::Sub)])
}

fn term(i: &mut &str) -> Result<Expr> {
    chain(i, unary, [('*', BinOp::Mul), ('/', BinOp::Div)])
}

/// Minus signs before an atom; two cancel out, so a run of them never nests.
fn unary(i: &mut &str) -> Result<Expr> {
    let minus: usize = repeat(0.., terminated('-', multispace0))
        .fold(|| 0, |n, _| n + 1)
        .parse_next(i)?;
    let atom = atom.parse_next(i)?;
    Ok(if minus % 2 == 1 {
        Expr::Neg(Box::new(atom))
    } else {
        atom
    })
}

fn atom(i: &mut &str) -> Result<Expr> {
    alt((
        number,
        text,
        reference,
        call,
        Caseless("TRUE").value(Expr::Boolean(true)),
        Caseless("FALSE").value(Expr::Boolean(false)),
        delimited(('(', multispace0), expr, (multispace0, ')')),
    ))
    .parse_next(i)
}

fn number(i: &mut &str) -> Result<Expr> {
    (
        digit1,
        opt(('.', digit1)),
        opt((one_of(['e', 'E']), opt(one_of(['+', '-'])), digit1)),
    )
        .take()
        .verify_map(|s: &str| {
            if s.contains(['.', 'e', 'E']) {
                s.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .map(Expr::Float)
            } else {
                s.parse::<i64>().ok().map(Expr::Integer)
            }
        })
        .parse_next(i)
}

fn text(i: &mut &str) -> Result<Expr> {
    delimited(
        '"',
        repeat(
            0..,
            alt((
                preceded('\\', one_of(['"', '\\'])),
                none_of(['"', '\\', '\0']),
            )),
        )
        .fold(String::new, |mut s, c| {
            s.push(c);
            s
        }),
        '"',
    )
    .map(Expr::Text)
    .parse_next(i)
}

fn reference(i: &mut &str) -> Result<Expr> {
    delimited('[', take_till(1.., [']', '\0']), ']')
        .map(|r: &str| Expr::Ref(r.trim().to_string()))
        .parse_next(i)
}

fn arguments(i: &mut &str) -> Result<Vec<Expr>> {
    delimited(
        (multispace0, '(', multispace0),
        separated(1.., expr, (multispace0, ',', multispace0)),
        (multispace0, ')'),
    )
    .parse_next(i)
}

fn call(i: &mut &str) -> Result<Expr> {
    alt((
        preceded(Caseless("IF"), arguments).verify_map(|args| {
            let [condition, then, otherwise] = <[Expr; 3]>::try_from(args).ok()?;
            Some(Expr::If(
                Box::new(condition),
                Box::new(then),
                Box::new(otherwise),
            ))
        }),
        preceded(Caseless("AND"), arguments).map(Expr::And),
        preceded(Caseless("OR"), arguments).map(Expr::Or),
    ))
    .parse_next(i)
}
